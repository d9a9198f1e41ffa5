;;; Phase 1: classification (NeuSymMS IV.C). Every candidate gets one of the nine categories.
;;; The relation table in policy.clp first, then patterns over the relation name, then `other`.

(defrule classify-negation
  (declare (salience 100))
  ?c <- (candidate-fact (relation ?r) (status new))
  (negation-target (negation ?r))
  =>
  (modify ?c (status negation) (category other)))

(defrule classify-by-relation
  (declare (salience 100))
  ?c <- (candidate-fact (relation ?r) (status new))
  (relation-policy (relation ?r) (category ?cat) (cardinality ?card))
  =>
  (modify ?c (category ?cat) (cardinality ?card) (status classified)))

(defrule classify-favorite-as-preference
  (declare (salience 90))
  ?c <- (candidate-fact (relation ?r) (status new))
  (test (or (eq (str-index "favorite_" ?r) 1) (eq (str-index "favourite_" ?r) 1)))
  =>
  (modify ?c (category preference) (cardinality single) (status classified)))

(defrule classify-event-date-as-single
  (declare (salience 91))
  ?c <- (candidate-fact (relation ?r) (status new))
  (test (and (> (str-length ?r) 5)
             (eq (sub-string (- (str-length ?r) 4) (str-length ?r) ?r) "_date")))
  =>
  (modify ?c (category temporal) (cardinality single) (status classified)))

(defrule classify-liking-as-preference
  (declare (salience 89))
  ?c <- (candidate-fact (relation ?r) (status new))
  (test (or (str-index "prefer" ?r) (str-index "likes" ?r) (str-index "enjoys" ?r) (str-index "hates" ?r)))
  =>
  (modify ?c (category preference) (status classified)))

(defrule classify-ability-as-skill
  (declare (salience 88))
  ?c <- (candidate-fact (relation ?r) (status new))
  (test (or (str-index "speaks" ?r) (str-index "skill" ?r) (str-index "proficient" ?r)
            (eq (str-index "knows_" ?r) 1) (eq (str-index "can_" ?r) 1)))
  =>
  (modify ?c (category skill) (status classified)))

(defrule classify-time-as-temporal
  (declare (salience 87))
  ?c <- (candidate-fact (relation ?r) (status new))
  (test (or (str-index "birthday" ?r) (str-index "deadline" ?r) (str-index "appointment" ?r)
            (str-index "anniversary" ?r) (str-index "_date" ?r) (str-index "scheduled" ?r)
            (str-index "due_" ?r)))
  =>
  (modify ?c (category temporal) (status classified)))

(defrule classify-kin-as-relationship
  (declare (salience 86))
  ?c <- (candidate-fact (relation ?r) (status new))
  (test (or (str-index "married" ?r) (str-index "friend" ?r) (str-index "_of_user" ?r)
            (str-index "cousin" ?r) (str-index "aunt" ?r) (str-index "uncle" ?r)
            (str-index "niece" ?r) (str-index "nephew" ?r) (str-index "colleague" ?r)))
  =>
  (modify ?c (category relationship) (status classified)))

(defrule classify-todo-as-task
  (declare (salience 85))
  ?c <- (candidate-fact (relation ?r) (status new))
  (test (or (str-index "todo" ?r) (str-index "task" ?r) (str-index "needs_" ?r)
            (str-index "plans_" ?r) (str-index "remind" ?r)))
  =>
  (modify ?c (category task) (status classified)))

(defrule classify-by-instruction-intent
  (declare (salience 84))
  (prompt-context (intent instruction))
  ?c <- (candidate-fact (status new))
  =>
  (modify ?c (category instruction) (status classified)))

(defrule classify-other
  (declare (salience 80))
  ?c <- (candidate-fact (status new))
  =>
  (modify ?c (category other) (status classified)))
