//! The `op!` macro: one line of `forward.rs` per forwarded op.

/// Defines one op of `Acc<B>`: bump the op's counter, then evaluate the call.
///
/// `op!(index, fn name(arg: Type, ...) -> Ret => call)` expands to
/// `fn name(arg: Type, ...) -> Ret { counters::bump(index); call }`.
#[macro_export]
#[doc(hidden)]
macro_rules! op {
    ($index:expr, fn $name:ident($($arg:ident : $ty:ty),*) $(-> $ret:ty)? => $call:expr) => {
        fn $name($($arg: $ty),*) $(-> $ret)? {
            $crate::counters::bump($index);
            $call
        }
    };
}
