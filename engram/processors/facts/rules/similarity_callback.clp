;;; Phase 2a (callback mode): value similarity computed by Python functions registered with
;;; the environment (`value-similarity`: normalized Levenshtein; `value-contains`: whole-word
;;; containment). In precomputed mode Python asserts the same value-match facts instead.

(defrule match-same-relation
  (declare (salience 70))
  (cursor (seq ?s))
  (candidate-fact (seq ?s) (status classified) (key ?k) (relation ?r) (value ?v))
  (memory-fact (fact-id ?id) (key ?k) (relation ?r) (value ?mv&~?v))
  (not (value-match (seq ?s) (fact-id ?id)))
  =>
  (assert (value-match (seq ?s) (fact-id ?id) (score (value-similarity ?v ?mv)))))

(defrule match-negation-target
  (declare (salience 70))
  (cursor (seq ?s))
  (candidate-fact (seq ?s) (status negation) (key ?k) (relation ?n) (value ?v))
  (memory-fact (fact-id ?id) (key ?k) (relation ?r) (value ?mv))
  (or (negation-target (negation ?n) (target ?r))
      (negation-target (negation ?n) (target ANY)))
  (not (value-match (seq ?s) (fact-id ?id)))
  =>
  (assert (value-match (seq ?s) (fact-id ?id) (score (value-similarity ?v ?mv))
                       (contains (value-contains ?v ?mv)))))

(defrule match-opposite
  (declare (salience 70))
  (cursor (seq ?s))
  (candidate-fact (seq ?s) (status classified) (key ?k) (relation ?r) (value ?v))
  (opposite (relation ?r) (opposite ?o))
  (memory-fact (fact-id ?id) (key ?k) (relation ?o) (value ?mv))
  (not (value-match (seq ?s) (fact-id ?id)))
  =>
  (assert (value-match (seq ?s) (fact-id ?id) (score (value-similarity ?v ?mv)))))
