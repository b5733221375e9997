
; ---- TSX additions (appended to typescript.scm for .tsx files)
(jsx_opening_element name: (identifier) @name @ref.call)
(jsx_self_closing_element name: (identifier) @name @ref.call)
