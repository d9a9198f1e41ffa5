; JavaScript: classes and generators; the rest is in ecmascript.scm.
(class_declaration
  name: (identifier) @name
  (class_heritage (_) @base)?
  body: (class_body) @body) @definition.class

(generator_function_declaration
  name: (identifier) @name
  body: (statement_block) @body) @definition.function
