//! The `read_image` tool: reads an image file for an `@pic.png` mention,
//! the way `read_file` reads a text file for `@notes.txt`.
//!
//! Never offered to a model (it is not among [`builtin_tools`]; the
//! session refuses a model's call to it): the session runs it for what the
//! user typed, so the path goes through the same roots and confinement as
//! every file tool. Its output is the [`Image`](crate::protocol::Image) as
//! JSON — whole, never cut to the tool output limit (the image's own cap,
//! [`MAX_IMAGE_BYTES`], bounds it) — which the session turns back into
//! image content. It must never modify anything and never read a file over
//! the cap.
//!
//! [`builtin_tools`]: super::builtin_tools

use super::found::special_file;
use super::{BuiltinTool, ToolContext, ToolError, ToolOutput};
use crate::images::{self, MAX_IMAGE_BYTES};
use crate::tools::confine::{Confinement, Kind};
use schemars::JsonSchema;
use serde::Deserialize;
use std::io::Read;
use std::path::Path;

#[derive(Clone, Debug)]
pub struct ReadImage;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Path of the image, absolute or relative to the workspace.
    pub path: String,
}

impl BuiltinTool for ReadImage {
    const NAME: &'static str = crate::model::READ_IMAGE;
    const DESCRIPTION: &'static str = "Read a PNG, JPEG, GIF or WebP image file for an `@` \
        mention the user typed. Run by the session itself, never offered to a model; its \
        output is the image as JSON (media type and base64 bytes), kept whole.";
    const WHOLE_OUTPUT: bool = true;
    type Params = Params;

    fn run(
        &self,
        params: Params,
        ctx: ToolContext,
    ) -> impl std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static {
        let path = ctx.resolve(&params.path);
        let confinement = Confinement::of(&ctx);
        let source = params.path;
        super::blocking("read_image", move || {
            let bytes = read_capped(&confinement, &path, &source)?;
            let image = images::from_bytes(&source, &bytes)
                .map_err(|e| ToolError::failed(e.to_string()))?;
            serde_json::to_string(&image)
                .map(ToolOutput::ok)
                .map_err(|e| ToolError::failed(format!("could not encode the image: {e}")))
        })
    }
}

/// The bytes of the regular file at `path` (checked against the roots); a
/// file over [`MAX_IMAGE_BYTES`] is refused with its size, unread.
fn read_capped(confinement: &Confinement, path: &Path, source: &str) -> Result<Vec<u8>, ToolError> {
    let Some(opened) = confinement.open(path, "read")? else {
        return Err(ToolError::failed(format!(
            "file not found: {} (check the path; relative paths resolve against the workspace)",
            path.display()
        )));
    };
    match opened.kind {
        Kind::RegularFile => {}
        Kind::Directory => {
            return Err(ToolError::failed(format!(
                "{} {}",
                path.display(),
                crate::model::NOT_A_FILE
            )));
        }
        Kind::Special => return Err(special_file(path, "read_image", "reads")),
    }
    let file = opened.read()?;
    let size = file
        .metadata()
        .map_err(|e| ToolError::io("read", path, e))?
        .len();
    if size > MAX_IMAGE_BYTES as u64 {
        let too_large = images::ImageError::TooLarge {
            path: source.to_string(),
            size: usize::try_from(size).unwrap_or(usize::MAX),
        };
        return Err(ToolError::failed(too_large.to_string()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_IMAGE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::io("read", path, e))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Image;
    use crate::tools::Tool;
    use serde_json::json;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    async fn read(dir: &Path, path: &str) -> Result<ToolOutput, ToolError> {
        let ctx = ToolContext::new(dir);
        ReadImage.call(json!({ "path": path }), ctx).await
    }

    #[tokio::test]
    async fn an_image_is_its_kind_and_bytes_whatever_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let mut big = PNG.to_vec();
        big.resize(300_000, 7);
        std::fs::write(dir.path().join("pic.png"), &big).unwrap();
        let output = read(dir.path(), "pic.png").await.unwrap();
        let image: Image = serde_json::from_str(&output.text).unwrap();
        assert_eq!(image.media_type, "image/png");
        assert_eq!(image.source, "pic.png");
        assert_eq!(images::decoded_len(&image), big.len());
    }

    #[tokio::test]
    async fn text_named_like_an_image_and_a_missing_file_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("fake.png"), "not an image").unwrap();
        let fake = read(dir.path(), "fake.png").await.unwrap_err().to_string();
        assert!(
            fake.contains("fake.png is not a PNG, JPEG, GIF or WebP image"),
            "{fake}"
        );
        let missing = read(dir.path(), "gone.png").await.unwrap_err().to_string();
        assert!(missing.contains("file not found"), "{missing}");
    }

    #[tokio::test]
    async fn an_image_over_the_cap_is_refused_with_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let mut huge = PNG.to_vec();
        huge.resize(MAX_IMAGE_BYTES + 10, 0);
        std::fs::write(dir.path().join("huge.png"), &huge).unwrap();
        let error = read(dir.path(), "huge.png").await.unwrap_err().to_string();
        assert!(
            error.contains(&format!(
                "huge.png is {} bytes; an image may be at most",
                huge.len()
            )),
            "{error}"
        );
    }
}
