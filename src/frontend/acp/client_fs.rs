//! The editor as the holder of the files: a [`FileAccess`] that reads and
//! writes through `fs/read_text_file` and `fs/write_text_file`, so the
//! agent sees unsaved buffers and its writes land in the editor.
//!
//! Only for sessions in this process, and only when the client offers both
//! methods (a session then reads and writes the same text; half of it
//! through the editor and half on the disk would not be). With `--attach`
//! the tools run in the daemon, which cannot reach this editor: there the
//! file tools work on the daemon's disk.
//!
//! It never touches the disk, and never reaches a path the tools did not
//! pass it (they checked it against the roots first).

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ReadTextFileRequest, SessionId, WriteTextFileRequest};
use agentbus_engine::runtime::{FileAccess, FileAccessError};
use futures::future::BoxFuture;
use std::path::Path;

/// Files read and written through the editor, for one session.
pub struct ClientFiles {
    pub connection: ConnectionTo<Client>,
    pub session: SessionId,
}

impl FileAccess for ClientFiles {
    fn holder(&self) -> &str {
        "the editor"
    }

    fn read_text(&self, path: &Path) -> BoxFuture<'static, Result<String, FileAccessError>> {
        let request = self
            .connection
            .send_request(ReadTextFileRequest::new(self.session.clone(), path));
        Box::pin(async move {
            request
                .block_task()
                .await
                .map(|response| response.content)
                .map_err(refusal)
        })
    }

    fn write_text(
        &self,
        path: &Path,
        text: String,
    ) -> BoxFuture<'static, Result<(), FileAccessError>> {
        let request = self.connection.send_request(WriteTextFileRequest::new(
            self.session.clone(),
            path,
            text,
        ));
        Box::pin(async move { request.block_task().await.map(drop).map_err(refusal) })
    }
}

/// The editor's error in words: its message, and its details when it gave
/// some.
fn refusal(error: agent_client_protocol::Error) -> FileAccessError {
    match error.data {
        Some(data) if !data.is_null() => {
            FileAccessError::new(format!("{} ({data})", error.message))
        }
        _ => FileAccessError::new(error.message),
    }
}
