//! The `op!` macro: one line of `forward.rs` per forwarded op.

/// Defines one op of `Acc<B>`.
///
/// `op!(index, fn name(arg: Type, ...) -> Ret => call)` expands to
/// `fn name(arg: Type, ...) -> Ret { counters::bump(index); call }`, timed by a
/// `trace::span` while the profiler traces the thread.
///
/// `op!(index, policy[plain, ...][optional, ...][lists, ...], fn ... => call)` first casts the
/// named float arguments as the autocast policy says (`lower`, `float32` or `promote`, see
/// `crate::autocast`) when autocast is on, then evaluates the call with the cast arguments.
#[macro_export]
#[doc(hidden)]
macro_rules! op {
    ($index:expr, fn $name:ident($($arg:ident : $ty:ty),*) $(-> $ret:ty)? => $call:expr) => {
        fn $name($($arg: $ty),*) $(-> $ret)? {
            $crate::counters::bump($index);
            let _span = $crate::trace::span($index);
            $call
        }
    };
    ($index:expr, $policy:ident[$($t:ident),*][$($o:ident),*][$($v:ident),*],
     fn $name:ident($($arg:ident : $ty:ty),*) $(-> $ret:ty)? => $call:expr) => {
        fn $name($($arg: $ty),*) $(-> $ret)? {
            $crate::counters::bump($index);
            let _span = $crate::trace::span($index);
            if let Some(autocast) = $crate::autocast::autocast_dtype() {
                let mut plan = $crate::op!(@plan $policy, autocast);
                $( plan.see(burn::tensor::TensorMetadata::dtype(&$t)); )*
                $( if let Some(t) = &$o { plan.see(burn::tensor::TensorMetadata::dtype(t)); } )*
                $( for t in &$v { plan.see(burn::tensor::TensorMetadata::dtype(t)); } )*
                if let Some(target) = plan.target() {
                    $( let $t = $crate::autocast::cast::<B>($t, target); )*
                    $( let $o = $o.map(|t| $crate::autocast::cast::<B>(t, target)); )*
                    $( let $v: Vec<_> = $v.into_iter().map(|t| $crate::autocast::cast::<B>(t, target)).collect(); )*
                    $crate::counters::bump_in_dtype($index, target);
                    return $call;
                }
            }
            $call
        }
    };
    (@plan lower, $autocast:expr) => {
        $crate::autocast::Plan::new($crate::autocast::Policy::Lower, $autocast)
    };
    (@plan float32, $autocast:expr) => {
        $crate::autocast::Plan::new($crate::autocast::Policy::Float32, $autocast)
    };
    (@plan promote, $autocast:expr) => {
        $crate::autocast::Plan::new($crate::autocast::Policy::Promote, $autocast)
    };
}
