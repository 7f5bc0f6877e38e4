//! Window bookkeeping of shifted-window attention: timm's plain-Burn window ops, which live in
//! `burnacc_backend::swin_window` (shared with the kernels' benchmark) and are re-exported here.

pub use burnacc_backend::swin_window::*;
