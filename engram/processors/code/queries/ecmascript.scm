; JavaScript and TypeScript (whose grammar extends JavaScript's): the patterns both languages share.
; Each of javascript.scm and typescript.scm is read with this file after it (languages.py).
(function_declaration
  name: (identifier) @name
  body: (statement_block) @body) @definition.function

(method_definition
  name: (_) @name
  body: (statement_block) @body) @definition.function

(variable_declarator
  name: (identifier) @name
  value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) @definition.function

(call_expression
  function: (_) @callee) @call

(new_expression
  constructor: (_) @callee) @call

(import_statement) @import

(variable_declarator
  name: (identifier) @target
  value: (new_expression constructor: (_) @type)) @assign

(assignment_expression
  left: (member_expression) @target
  right: (new_expression constructor: (_) @type)) @assign
