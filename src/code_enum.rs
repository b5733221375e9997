//! One declaration pattern for the enums whose values are stored (graph format, fact
//! cache): explicit discriminants, `ALL`, `code`, `from_code` and a stable `as_str` name.
//! `tests/codes.rs` pins every code and name.

/// Declares a code enum:
///
/// ```ignore
/// code_enum! {
///     /// Docs.
///     #[derive(rkyv::Archive)]          // more derives, if stored by rkyv
///     pub enum Kind {
///         First = 0 => "first",
///         Second = 1 => "second",
///     }
/// }
/// ```
macro_rules! code_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$variant_meta:meta])* $variant:ident = $code:literal => $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        $vis enum $name {
            $( $(#[$variant_meta])* $variant = $code, )+
        }

        impl $name {
            /// Every value, in code order.
            pub const ALL: [$name; [$($code),+].len()] = [$($name::$variant),+];

            /// The stored code.
            pub const fn code(self) -> u8 {
                self as u8
            }

            /// The value of a stored code; `None` for a code this build does not know.
            pub fn from_code(code: u8) -> Option<$name> {
                match code {
                    $( $code => Some($name::$variant), )+
                    _ => None,
                }
            }

            /// The stable name (JSON, text, dumps).
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
        }
    };
}

pub(crate) use code_enum;
