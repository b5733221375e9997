; Python facts for atlas. Capture names are validated at load (src/lang/mod.rs).

; ---- definitions
(class_definition name: (identifier) @name) @def.class
(function_definition name: (identifier) @name) @def.function
(module (expression_statement (assignment left: (identifier) @name) @def.variable))
(class_definition
  body: (block (expression_statement (assignment left: (identifier) @name) @def.field)))

; ---- references
(call function: (identifier) @name) @ref.call
(call function: (attribute object: (_) @receiver attribute: (identifier) @name)) @ref.call
(decorator (identifier) @name @ref.call)
(decorator (call function: (identifier) @name) @ref.call)
(class_definition
  superclasses: (argument_list (identifier) @name @ref.inherit))
(class_definition
  superclasses: (argument_list
    (attribute object: (_) @qualifier attribute: (identifier) @name) @ref.inherit))
(type (identifier) @name @ref.type)
(type (generic_type (identifier) @name @ref.type))
(argument_list (identifier) @name @ref.read)
; a method or function passed on as a callback (`run_sync(self.lookup_path, p)`)
(argument_list (attribute object: (_) @receiver attribute: (identifier) @name) @ref.read)
(keyword_argument value: (attribute object: (_) @receiver attribute: (identifier) @name) @ref.read)
(keyword_argument value: (identifier) @name @ref.read)
(assignment right: (identifier) @name @ref.read)

; ---- imports
(import_statement name: (dotted_name) @import.module) @import
(import_statement
  name: (aliased_import name: (dotted_name) @import.module alias: (identifier) @import.alias)) @import
(import_from_statement
  module_name: (_) @import.module
  name: (dotted_name) @import.name) @import
(import_from_statement
  module_name: (_) @import.module
  name: (aliased_import name: (dotted_name) @import.name alias: (identifier) @import.alias)) @import
(import_from_statement
  module_name: (_) @import.module
  (wildcard_import) @import.wildcard) @import

; ---- type bindings (receiver types for member calls)
(typed_parameter (identifier) @binding.name type: (type) @binding.type) @binding
(typed_default_parameter name: (identifier) @binding.name type: (type) @binding.type) @binding
(parameters (identifier) @binding.name @binding)
(default_parameter name: (identifier) @binding.name) @binding
(assignment left: (identifier) @binding.name type: (type) @binding.type) @binding
(assignment left: (identifier) @binding.name right: (call function: (_) @binding.ctor) @binding.value) @binding
(assignment left: (identifier) @binding.name right: (_) @binding.value) @binding
(assignment left: (identifier) @binding.name) @binding
(assignment
  left: (attribute object: (identifier) @_self attribute: (identifier) @binding.name)
  right: (call function: (_) @binding.ctor) @binding.value
  (#eq? @_self "self")) @binding
(assignment
  left: (attribute object: (identifier) @_self attribute: (identifier) @binding.name)
  right: (_) @binding.value
  (#eq? @_self "self")) @binding
(assignment
  left: (attribute object: (identifier) @_self attribute: (identifier) @binding.name)
  type: (type) @binding.type
  (#eq? @_self "self")) @binding
(for_statement left: (identifier) @binding.name right: (_) @binding.iterable) @binding
(with_item value: (as_pattern (call) @binding.value alias: (as_pattern_target (identifier) @binding.name))) @binding
; narrowing: `if isinstance(x, T):` / `assert isinstance(x, T)` types x as T from there on
(if_statement
  condition: (call
    function: (identifier) @_f
    arguments: (argument_list . (identifier) @binding.name . [(identifier) (attribute)] @binding.type))
  (#eq? @_f "isinstance")) @binding
(assert_statement
  (call
    function: (identifier) @_f
    arguments: (argument_list . (identifier) @binding.name . [(identifier) (attribute)] @binding.type))
  (#eq? @_f "isinstance")) @binding
