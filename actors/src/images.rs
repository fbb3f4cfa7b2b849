//! Images attached to a query: what kind an image is (by its bytes, never
//! its name), the size cap, and the token estimate. Pure.

use crate::protocol::Image;
use base64::Engine as _;

/// The largest image accepted, in bytes: Anthropic's limit per image
/// (OpenAI's is higher), so an image accepted here goes to either.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// What one image counts for in the token estimates (`/context`, pruning)
/// before the provider reports real figures: Anthropic's cost of an image
/// at its largest unscaled size (about 1.15 megapixels, width × height /
/// 750 ≈ 1,600 tokens), above what OpenAI charges for a high-detail
/// 1024×1024 image (765), so the estimate errs on the side of room.
pub const IMAGE_TOKENS: u64 = 1_600;

/// The media types accepted, as both APIs name them.
pub const MEDIA_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Why bytes are not an image that can be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("{path} is not a PNG, JPEG, GIF or WebP image")]
    NotAnImage { path: String },
    #[error("{path} is {size} bytes; an image may be at most {max} bytes (5 MB)", max = MAX_IMAGE_BYTES)]
    TooLarge { path: String, size: usize },
    #[error("{path}: the image data is not valid base64")]
    BadBase64 { path: String },
    #[error("{path}: media type {media_type} does not match the image's bytes ({found})")]
    WrongMediaType {
        path: String,
        media_type: String,
        found: String,
    },
}

/// The media type `bytes` begin with, if they are a PNG, JPEG, GIF or WebP
/// image.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Whether a path names an image by its extension (how an `@` mention is
/// told from a text file before it is read; its bytes decide after).
pub fn looks_like_image(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [".png", ".jpg", ".jpeg", ".gif", ".webp"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// The image `bytes` are, read from `source` (a path, for messages).
pub fn from_bytes(source: &str, bytes: &[u8]) -> Result<Image, ImageError> {
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(ImageError::TooLarge {
            path: source.to_string(),
            size: bytes.len(),
        });
    }
    let media_type = sniff(bytes).ok_or_else(|| ImageError::NotAnImage {
        path: source.to_string(),
    })?;
    Ok(Image {
        source: source.to_string(),
        media_type: media_type.to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

/// An image sent as base64 (the HTTP API's `images`), checked as the
/// providers would: valid base64, within the size cap, a known kind whose
/// bytes match `media_type` (when one is given).
pub fn from_base64(
    source: &str,
    media_type: Option<&str>,
    data: &str,
) -> Result<Image, ImageError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|_| ImageError::BadBase64 {
            path: source.to_string(),
        })?;
    let image = from_bytes(source, &bytes)?;
    if let Some(given) = media_type
        && given != image.media_type
    {
        return Err(ImageError::WrongMediaType {
            path: source.to_string(),
            media_type: given.to_string(),
            found: image.media_type,
        });
    }
    Ok(image)
}

/// The size of an image's bytes, from its base64.
pub fn decoded_len(image: &Image) -> usize {
    let data = image.data.trim_end_matches('=');
    data.len() * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn kinds_are_told_by_their_bytes() {
        assert_eq!(sniff(PNG), Some("image/png"));
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a...."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(sniff(b"hello"), None);
    }

    #[test]
    fn an_image_is_base64_with_its_media_type_and_size_capped() {
        let image = from_bytes("a.png", PNG).unwrap();
        assert_eq!(image.media_type, "image/png");
        assert_eq!(image.source, "a.png");
        assert_eq!(decoded_len(&image), PNG.len());
        assert_eq!(
            from_base64("a.png", Some("image/png"), &image.data),
            Ok(image.clone())
        );
        assert!(matches!(
            from_base64("x", Some("image/jpeg"), &image.data),
            Err(ImageError::WrongMediaType { .. })
        ));
        assert!(matches!(
            from_base64("x", None, "not base64!"),
            Err(ImageError::BadBase64 { .. })
        ));
        assert_eq!(
            from_bytes("a.txt", b"hello"),
            Err(ImageError::NotAnImage {
                path: "a.txt".into()
            })
        );
        let mut big = PNG.to_vec();
        big.resize(MAX_IMAGE_BYTES + 1, 0);
        let err = from_bytes("big.png", &big).unwrap_err();
        assert!(
            err.to_string().contains("at most 5242880 bytes (5 MB)"),
            "{err}"
        );
    }

    #[test]
    fn mentions_of_images_are_told_by_extension() {
        assert!(looks_like_image("shots/A.PNG"));
        assert!(looks_like_image("x.jpeg") && looks_like_image("x.webp"));
        assert!(!looks_like_image("notes.txt"));
    }
}
