; Java facts for atlas.

(package_declaration (scoped_identifier) @package)
(package_declaration (identifier) @package)

; ---- definitions
(class_declaration name: (identifier) @name) @def.class
(record_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(annotation_type_declaration name: (identifier) @name) @def.interface
(enum_declaration name: (identifier) @name) @def.enum
(enum_constant name: (identifier) @name) @def.constant
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.method
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @def.field

; ---- references
(method_invocation object: (_) @receiver name: (identifier) @name) @ref.call
(method_invocation !object name: (identifier) @name) @ref.call
(object_creation_expression type: (type_identifier) @name) @ref.call
(superclass (type_identifier) @name @ref.inherit)
(super_interfaces (type_list (type_identifier) @name @ref.implement))
(extends_interfaces (type_list (type_identifier) @name @ref.inherit))
(type_identifier) @name @ref.type
(argument_list (identifier) @name @ref.read)

; ---- imports
(import_declaration (scoped_identifier) @import.module (asterisk)? @import.wildcard) @import

; ---- type bindings (receiver types for member calls)
(formal_parameter type: (_) @binding.type name: (identifier) @binding.name) @binding
(local_variable_declaration type: (_) @binding.type declarator: (variable_declarator name: (identifier) @binding.name)) @binding
(field_declaration type: (_) @binding.type declarator: (variable_declarator name: (identifier) @binding.name)) @binding
