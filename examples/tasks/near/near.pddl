; A task package's domain (examples/tasks/near/near_task.py): put one block down beside another.
;
; (near ?x ?y): both blocks rest upright on the table, their centres within NEAR_M of each other
; (symmetric, so place-near adds both ways round). place-near picks ?x up and sets it down beside
; ?y, away from every other block, so ?x is near nothing else afterwards.
; The orientation predicates are declared because near_pair's init stands each block by them, and
; the relations so that generated problems carry the blocks world's (demoforge.tasks.generate_family
; adds the base facts a domain declares); no action here changes them.
(define (domain demoforge-near)
  (:requirements :strips :typing :negative-preconditions :conditional-effects :equality)
  (:types block face angle)
  (:constants
    px nx py ny pz nz - face
    yaw0 yaw90 yaw180 yaw270 - angle)
  (:predicates
    (on_table ?x - block)
    (clear ?x - block)
    (hand_empty)
    (face_up ?x - block ?f - face)
    (yaw ?x - block ?a - angle)
    (adjacent ?f - face ?g - face)
    (tip_yaw ?f - face ?g - face ?a - angle ?c - angle)
    (yaw_step ?a - angle ?c - angle)
    (near ?x - block ?y - block))

  (:action place-near
    :parameters (?x - block ?y - block)
    :precondition (and (on_table ?x) (clear ?x) (on_table ?y) (hand_empty) (not (= ?x ?y)) (not (near ?x ?y)))
    :effect (and (near ?x ?y) (near ?y ?x)
                 (forall (?z - block)
                   (when (not (= ?z ?y)) (and (not (near ?x ?z)) (not (near ?z ?x)))))))
)
