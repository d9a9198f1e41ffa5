; TypeScript and TSX: classes, interfaces and class fields; the rest is in ecmascript.scm.
(class_declaration
  name: (type_identifier) @name
  (class_heritage)? @heritage
  body: (class_body) @body) @definition.class

(abstract_class_declaration
  name: (type_identifier) @name
  (class_heritage)? @heritage
  body: (class_body) @body) @definition.class

(interface_declaration
  name: (type_identifier) @name
  (extends_type_clause)? @heritage
  body: (interface_body) @body) @definition.class

(public_field_definition
  name: (property_identifier) @target
  value: (new_expression constructor: (_) @type)) @assign.field
