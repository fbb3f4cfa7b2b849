//! Replies as Markdown in the terminal.
//!
//! - [`stream`]: [`MarkdownStream`], a reply's text deltas in, final
//!   rendered lines out, block by block (a fence line by line, a list item
//!   by item); the unfinished rest is for the caller to show plain.
//! - [`blocks`]: one piece of Markdown parsed (pulldown-cmark) and laid out
//!   as styled lines of a given width.
//! - [`code`]: fenced code highlighted by syntect, line by line.
//! - [`styled`]: spans, wrapping by display width, SGR escape codes.
//!
//! Used only when colour is on: with colour off (`NO_COLOR`, a pipe) the
//! front ends print the text exactly as the model wrote it.

pub mod blocks;
pub mod code;
pub mod stream;
pub mod styled;

#[cfg(test)]
pub mod tests;

pub use blocks::Layout;
pub use stream::MarkdownStream;
