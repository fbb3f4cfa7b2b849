//! The export format: one session, its metadata and its persisted events, as
//! a versioned JSON document (`/save`, `/load`, `agentbus export`).
//!
//! Exists so that a session can leave one store and enter another (another
//! machine, a bug report, a later agentbus) and so that what is accepted on
//! the way back in is checked in one place. Pure: no I/O, no clock, no store.
//!
//! Never carries anything but the session's metadata and its persisted
//! events. Those hold no secrets (API keys stay in the environment; the
//! session state never contains them), and nothing else — settings, the
//! environment, the lease — may ever be added to a document.
//!
//! Reading is strict: a document that is not JSON, not an agentbus export,
//! from a newer format version, or whose log is not one session's clean,
//! ordered, persisted events is refused with a message that names the
//! problem (and the event, by index, where one is to blame).

use crate::protocol::{EventEnvelope, SessionId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `format` field of every export.
pub const DOCUMENT_FORMAT: &str = "agentbus-session";
/// The newest format version this code writes and reads.
pub const DOCUMENT_VERSION: u32 = 1;

/// One exported session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionDocument {
    /// Always `agentbus-session`.
    pub format: String,
    /// The format version it was written in (1 here).
    pub version: u32,
    pub exported_at: DateTime<Utc>,
    pub session: DocumentSession,
    /// The persisted events in seq order (never a `stream_event`).
    pub events: Vec<EventEnvelope>,
}

/// The metadata of an exported session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocumentSession {
    pub id: SessionId,
    #[serde(default)]
    pub title: Option<String>,
    pub created_at: DateTime<Utc>,
    pub model: String,
    pub workspace: String,
    /// The session this one was forked from, if any.
    #[serde(default)]
    pub parent: Option<SessionId>,
    /// The parent's seq the fork was taken at.
    #[serde(default)]
    pub fork_seq: Option<u64>,
}

/// Why a document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocumentError {
    #[error("not an agentbus session export: the text is not JSON ({detail})")]
    NotJson { detail: String },

    #[error(
        "not an agentbus session export: {}",
        match found {
            Some(found) => format!("its format is {found}, expected \"{DOCUMENT_FORMAT}\""),
            None => format!("it has no \"format\": \"{DOCUMENT_FORMAT}\" field"),
        }
    )]
    WrongFormat {
        /// The `format` value found (as JSON), if there was one.
        found: Option<String>,
    },

    #[error(
        "this session export was written by a newer agentbus: format version {found}, \
         this agentbus reads up to {supported}"
    )]
    NewerVersion { found: u64, supported: u32 },

    #[error("session export: {detail}")]
    Invalid { detail: String },

    #[error("session export: event {index} does not parse: {detail}")]
    BadEvent { index: usize, detail: String },

    #[error(
        "session export: event {index} has seq {seq}, but the event before it has seq {previous}; \
         seqs must strictly increase"
    )]
    SeqDisorder {
        index: usize,
        seq: u64,
        previous: u64,
    },

    #[error(
        "session export: event {index} belongs to session {found}, but the export is of session \
         {expected}; a log holds one session's events"
    )]
    ForeignSession {
        index: usize,
        found: SessionId,
        expected: SessionId,
    },

    #[error(
        "session export: event {index} (seq {seq}) is a stream_event; streamed partial output is \
         never part of a saved log"
    )]
    StreamEvent { index: usize, seq: u64 },
}

impl SessionDocument {
    /// A document of the current format version.
    pub fn new(
        session: DocumentSession,
        events: Vec<EventEnvelope>,
        exported_at: DateTime<Utc>,
    ) -> Self {
        SessionDocument {
            format: DOCUMENT_FORMAT.to_string(),
            version: DOCUMENT_VERSION,
            exported_at,
            session,
            events,
        }
    }

    /// The document as indented JSON, the form written to files.
    pub fn to_json_pretty(&self) -> String {
        // Plain data with string keys only: serialising it cannot fail.
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| unreachable!("a SessionDocument always serialises: {e}"))
    }

    /// Read and check a document (see [`SessionDocument::validate`]).
    pub fn from_json(text: &str) -> Result<Self, DocumentError> {
        let value: Value = serde_json::from_str(text).map_err(|e| DocumentError::NotJson {
            detail: e.to_string(),
        })?;
        let Value::Object(mut object) = value else {
            return Err(DocumentError::WrongFormat { found: None });
        };
        match object.get("format") {
            Some(Value::String(format)) if format == DOCUMENT_FORMAT => {}
            found => {
                return Err(DocumentError::WrongFormat {
                    found: found.map(Value::to_string),
                });
            }
        }
        let version = match object.get("version") {
            Some(Value::Number(n)) => n.as_u64(),
            _ => None,
        }
        .ok_or_else(|| DocumentError::Invalid {
            detail: "\"version\" is missing or not a whole number".to_string(),
        })?;
        if version > u64::from(DOCUMENT_VERSION) {
            return Err(DocumentError::NewerVersion {
                found: version,
                supported: DOCUMENT_VERSION,
            });
        }
        if version == 0 {
            return Err(DocumentError::Invalid {
                detail: "format version 0 does not exist".to_string(),
            });
        }

        // Events one by one, so a bad one is named by its index.
        let raw_events = match object.remove("events") {
            Some(Value::Array(events)) => events,
            _ => {
                return Err(DocumentError::Invalid {
                    detail: "\"events\" is missing or not a list".to_string(),
                });
            }
        };
        let events = raw_events
            .into_iter()
            .enumerate()
            .map(|(index, event)| {
                serde_json::from_value::<EventEnvelope>(event).map_err(|e| {
                    DocumentError::BadEvent {
                        index,
                        detail: e.to_string(),
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()?;

        #[derive(Deserialize)]
        struct Head {
            version: u32,
            exported_at: DateTime<Utc>,
            session: DocumentSession,
        }
        let head: Head = serde_path_to_error::deserialize(Value::Object(object)).map_err(|e| {
            DocumentError::Invalid {
                detail: format!("at {}: {}", e.path(), e.inner()),
            }
        })?;

        let document = SessionDocument {
            format: DOCUMENT_FORMAT.to_string(),
            version: head.version,
            exported_at: head.exported_at,
            session: head.session,
            events,
        };
        document.validate()?;
        Ok(document)
    }

    /// Check the document: a parent comes with its fork seq, and the log is
    /// this session's persisted events (no `stream_event`) with strictly
    /// increasing seqs.
    pub fn validate(&self) -> Result<(), DocumentError> {
        if self.session.parent.is_some() != self.session.fork_seq.is_some() {
            return Err(DocumentError::Invalid {
                detail: "session.parent and session.fork_seq must be given together".to_string(),
            });
        }
        let mut previous: Option<u64> = None;
        for (index, event) in self.events.iter().enumerate() {
            if event.session_id != self.session.id {
                return Err(DocumentError::ForeignSession {
                    index,
                    found: event.session_id.clone(),
                    expected: self.session.id.clone(),
                });
            }
            if !event.message.is_persisted() {
                return Err(DocumentError::StreamEvent {
                    index,
                    seq: event.seq,
                });
            }
            if let Some(previous) = previous
                && event.seq <= previous
            {
                return Err(DocumentError::SeqDisorder {
                    index,
                    seq: event.seq,
                    previous,
                });
            }
            previous = Some(event.seq);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AgentMessage, StreamDelta, StreamEvent, UserEvent};
    use chrono::TimeZone;

    fn at(second: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, second)
            .single()
            .expect("valid date")
    }

    fn user(session: &str, seq: u64, text: &str) -> EventEnvelope {
        EventEnvelope {
            session_id: SessionId::from(session),
            seq,
            turn_id: Some(1),
            at: at(seq as u32 % 60),
            message: AgentMessage::User(UserEvent::new(text.to_string())),
        }
    }

    fn document(events: Vec<EventEnvelope>) -> SessionDocument {
        SessionDocument::new(
            DocumentSession {
                id: SessionId::from("s-1"),
                title: Some("hello".to_string()),
                created_at: at(0),
                model: "default".to_string(),
                workspace: "/tmp/w".to_string(),
                parent: None,
                fork_seq: None,
            },
            events,
            at(59),
        )
    }

    /// The document as a JSON value, for tests that damage it.
    fn value(document: &SessionDocument) -> Value {
        serde_json::from_str(&document.to_json_pretty()).expect("own output is JSON")
    }

    fn refused(value: Value) -> String {
        match SessionDocument::from_json(&value.to_string()) {
            Ok(_) => panic!("accepted a bad document: {value}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_document_round_trips_through_json() {
        let doc = document(vec![user("s-1", 1, "a"), user("s-1", 3, "b")]);
        let text = doc.to_json_pretty();
        assert!(text.contains("\"format\": \"agentbus-session\""));
        assert_eq!(SessionDocument::from_json(&text), Ok(doc));
    }

    #[test]
    fn from_json_refuses_text_that_is_not_json() {
        let e = SessionDocument::from_json("{ not json").expect_err("refused");
        assert!(matches!(e, DocumentError::NotJson { .. }));
        assert!(e.to_string().contains("not an agentbus session export"));
    }

    #[test]
    fn from_json_refuses_another_format_or_none() {
        let mut v = value(&document(vec![]));
        v["format"] = Value::from("something-else");
        let message = refused(v.clone());
        assert!(
            message.contains("not an agentbus session export"),
            "{message}"
        );
        assert!(message.contains("something-else"), "{message}");

        v.as_object_mut().expect("object").remove("format");
        let message = refused(v);
        assert!(
            message.contains("not an agentbus session export"),
            "{message}"
        );

        let message = refused(serde_json::json!([1, 2]));
        assert!(
            message.contains("not an agentbus session export"),
            "{message}"
        );
    }

    #[test]
    fn from_json_refuses_a_newer_version() {
        let mut v = value(&document(vec![]));
        v["version"] = Value::from(7);
        // A newer version may have changed anything else too: the version
        // is what the user must hear about.
        v["session"] = Value::from("changed shape");
        let message = refused(v);
        assert!(
            message.contains(
                "written by a newer agentbus: format version 7, this agentbus reads up to 1"
            ),
            "{message}"
        );
    }

    #[test]
    fn from_json_refuses_events_out_of_seq_order() {
        let doc = document(vec![user("s-1", 2, "a"), user("s-1", 2, "b")]);
        let message = refused(value(&doc));
        assert!(message.contains("event 1 has seq 2"), "{message}");
        assert!(message.contains("strictly increase"), "{message}");
    }

    #[test]
    fn from_json_refuses_a_stream_event() {
        let mut stream = user("s-1", 2, "");
        stream.message = AgentMessage::StreamEvent(StreamEvent {
            event: StreamDelta::BlockStop { index: 0 },
        });
        let doc = document(vec![user("s-1", 1, "a"), stream]);
        let message = refused(value(&doc));
        assert!(
            message.contains("event 1 (seq 2) is a stream_event"),
            "{message}"
        );
    }

    #[test]
    fn from_json_refuses_events_of_two_sessions() {
        let doc = document(vec![user("s-1", 1, "a"), user("s-2", 2, "b")]);
        let message = refused(value(&doc));
        assert!(
            message.contains("event 1 belongs to session s-2"),
            "{message}"
        );
    }

    #[test]
    fn from_json_names_the_event_that_does_not_parse() {
        let mut v = value(&document(vec![user("s-1", 1, "a"), user("s-1", 2, "b")]));
        v["events"][1]["type"] = Value::from("no_such_event");
        let message = refused(v);
        assert!(message.contains("event 1 does not parse"), "{message}");
    }

    #[test]
    fn from_json_names_bad_metadata() {
        let mut v = value(&document(vec![]));
        v["session"]["created_at"] = Value::from("yesterday");
        let message = refused(v);
        assert!(message.contains("session.created_at"), "{message}");
    }
}
