//! What the charts share: the bundled font plotters draws text with, and PNG files written
//! atomically.

use anyhow::{Context, Result};
use plotters::style::FontStyle;
use std::path::Path;
use std::sync::Once;

/// The font family every chart draws its text in.
pub const FONT: &str = "sans-serif";

/// Registers [`FONT`]: plotters draws text with fonts registered at run time; Ubuntu Light
/// ships inside `epaint_default_fonts`, so no system font is needed.
pub fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, epaint_default_fonts::UBUNTU_LIGHT)
            .unwrap_or_else(|_| panic!("the bundled Ubuntu Light font is a valid TrueType font"));
    });
}

/// Encodes RGB `pixels` (`width × height`) as a PNG file at `path`, written atomically.
pub fn write_png(width: u32, height: u32, pixels: Vec<u8>, path: &Path) -> Result<()> {
    let image = image::RgbImage::from_raw(width, height, pixels)
        .expect("the buffer has width × height RGB pixels");
    let mut png = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .with_context(|| format!("cannot encode {} as PNG", path.display()))?;
    crate::run_dir::write_atomic(path, &png)
}
