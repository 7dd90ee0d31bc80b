; A task package's domain (examples/tasks/kitchen/kitchen_task.py): a cup goes into a bowl or onto
; a plate. Cups, bowls and plates are subtypes of `block`, so the scene builds each as a free prop
; (the package's mesh ObjectTypes) and the built-in predicates (on_table, on) read them by their
; bounding boxes; `in` and `upright` are the package's own.
;
; (in ?c ?b): the cup stands upright inside the bowl, on its floor, at rest, not held.
; (on ?c ?p): the built-in `on`: the cup's bottom on the plate's top, over it, at rest, not held.
; (upright ?c): the cup's own up axis within the tilt tolerance of world up (both actions
; assert it of the cup, so the simulator checks the cup ends standing).
; Generated problems hold those of the blocks world's base facts whose predicates are declared
; here (hand_empty; distractor blocks on_table); the orientation relations are left out.
(define (domain demoforge-kitchen)
  (:requirements :strips :typing)
  (:types cup bowl plate - block
          block - object)
  (:predicates
    (on_table ?x - block)
    (hand_empty)
    (upright ?c - cup)
    (in ?c - cup ?b - bowl)
    (on ?x - block ?y - block))

  (:action put-in
    :parameters (?c - cup ?b - bowl)
    :precondition (and (hand_empty) (on_table ?c) (upright ?c) (on_table ?b))
    :effect (and (in ?c ?b) (upright ?c) (not (on_table ?c))))

  (:action put-on
    :parameters (?c - cup ?p - plate)
    :precondition (and (hand_empty) (on_table ?c) (upright ?c) (on_table ?p))
    :effect (and (on ?c ?p) (upright ?c) (not (on_table ?c))))
)
