; demoforge blocks domain: typed blocks, a one-hand robot, orientation and table regions.
;
; Orientation is symbolic: (face_up ?b ?f) names the block-frame axis that points up
; (pz: the block's +z is up, its rest orientation), (yaw ?b ?a) the block's turn about
; the world vertical in 90-degree steps. flip tips a block 90 degrees onto a face
; adjacent to the one up now, so the opposite face takes two flips; rotate turns it
; 90 degrees either way. Both act on a clear block on the table and keep its region;
; rotate keeps its face, flip moves its yaw as a tip does (a 90-degree tip turns the
; heading the yaw is read from by +-90 degrees: tip_yaw). The three static relations
; (adjacent, tip_yaw, yaw_step) are part of every problem's :init;
; demoforge.tasks.static_facts() lists them.
;
; A block is (in_region ?b ?r) only while it rests on the table inside region ?r;
; place-in-region puts it there, pick-up takes it out of every region.
(define (domain demoforge-blocks)
  (:requirements :strips :typing :negative-preconditions :conditional-effects :equality)
  (:types block face angle region)
  (:constants
    px nx py ny pz nz - face
    yaw0 yaw90 yaw180 yaw270 - angle)
  (:predicates
    (on ?x - block ?y - block)
    (on_table ?x - block)
    (clear ?x - block)
    (holding ?x - block)
    (hand_empty)
    (face_up ?x - block ?f - face)
    (yaw ?x - block ?a - angle)
    (in_region ?x - block ?r - region)
    (adjacent ?f - face ?g - face)
    (tip_yaw ?f - face ?g - face ?a - angle ?c - angle)
    (yaw_step ?a - angle ?c - angle))

  (:action pick-up
    :parameters (?x - block)
    :precondition (and (clear ?x) (on_table ?x) (hand_empty))
    :effect (and (holding ?x)
                 (not (on_table ?x)) (not (clear ?x)) (not (hand_empty))
                 (forall (?r - region) (not (in_region ?x ?r)))))

  (:action put-down
    :parameters (?x - block)
    :precondition (holding ?x)
    :effect (and (on_table ?x) (clear ?x) (hand_empty) (not (holding ?x))))

  (:action place-in-region
    :parameters (?x - block ?r - region)
    :precondition (holding ?x)
    :effect (and (on_table ?x) (clear ?x) (hand_empty) (in_region ?x ?r)
                 (not (holding ?x))))

  (:action stack
    :parameters (?x - block ?y - block)
    :precondition (and (holding ?x) (clear ?y) (not (= ?x ?y)))
    :effect (and (on ?x ?y) (clear ?x) (hand_empty)
                 (not (holding ?x)) (not (clear ?y))))

  (:action unstack
    :parameters (?x - block ?y - block)
    :precondition (and (on ?x ?y) (clear ?x) (hand_empty))
    :effect (and (holding ?x) (clear ?y)
                 (not (on ?x ?y)) (not (clear ?x)) (not (hand_empty))))

  (:action flip
    :parameters (?x - block ?from - face ?to - face)
    :precondition (and (clear ?x) (on_table ?x) (hand_empty)
                       (face_up ?x ?from) (adjacent ?from ?to))
    :effect (and (face_up ?x ?to) (not (face_up ?x ?from))
                 (forall (?a - angle ?c - angle)
                   (when (and (yaw ?x ?a) (tip_yaw ?from ?to ?a ?c))
                         (and (yaw ?x ?c) (not (yaw ?x ?a)))))))

  (:action rotate
    :parameters (?x - block ?from - angle ?to - angle)
    :precondition (and (clear ?x) (on_table ?x) (hand_empty)
                       (yaw ?x ?from) (yaw_step ?from ?to))
    :effect (and (yaw ?x ?to) (not (yaw ?x ?from))))
)
