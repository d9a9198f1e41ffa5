; Java: definitions, calls, imports and typed declarations for the Code Brain.
(class_declaration
  name: (identifier) @name
  superclass: (superclass)? @heritage
  interfaces: (super_interfaces)? @heritage
  body: (class_body) @body) @definition.class

(interface_declaration
  name: (identifier) @name
  (extends_interfaces)? @heritage
  body: (interface_body) @body) @definition.class

(enum_declaration
  name: (identifier) @name
  body: (enum_body) @body) @definition.class

(record_declaration
  name: (identifier) @name
  body: (class_body) @body) @definition.class

(method_declaration
  name: (identifier) @name
  body: (block) @body) @definition.function

(constructor_declaration
  name: (identifier) @name
  body: (constructor_body) @body) @definition.function

(method_invocation) @call

(object_creation_expression
  type: (_) @callee) @call

(import_declaration) @import

(package_declaration) @package

(local_variable_declaration
  type: (type_identifier) @type
  declarator: (variable_declarator name: (identifier) @target)) @assign

(field_declaration
  type: (type_identifier) @type
  declarator: (variable_declarator name: (identifier) @target)) @assign.field
