//! The NATS subjects of one cluster (docs/cluster.md, "Subjects"), written in one
//! place so that every node derives the same subject from the same session.
//!
//! | subject                          | carries                                      |
//! |----------------------------------|----------------------------------------------|
//! | `ab.<cluster>.s.<sid>.ev`        | the owner's events of session `sid`          |
//! | `ab.<cluster>.s.<sid>.in`        | inputs for `sid`, request/reply to its owner |
//! | `ab.<cluster>.lifecycle`         | sessions created, busy, idle, closed, ...    |
//!
//! `<cluster>` (`[cluster] nats_namespace`, checked to be one token where it
//! is configured: [`ClusterName`]) keeps deployments (and tests) sharing one
//! broker apart. Every
//! part put into a subject is checked to be one token: a name with a `.`,
//! `*`, `>` or a space would address other subjects, or many at once, and is
//! refused here rather than published. Never builds a subject from text it
//! has not checked, and never wildcards: nothing here subscribes to more
//! than one session.

use crate::protocol::SessionId;
pub use crate::settings::ClusterName;

/// Why a subject could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubjectError {
    #[error(
        "session id {id:?} is not a UUID in its hyphenated form (8-4-4-4-12 hex digits), so it \
         cannot name the session's NATS subjects"
    )]
    SessionId { id: String },
}

/// The subjects of one cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subjects {
    /// `ab.<cluster>`
    prefix: String,
}

impl Subjects {
    pub fn new(cluster: &ClusterName) -> Self {
        Subjects {
            prefix: format!("ab.{cluster}"),
        }
    }

    /// `ab.<cluster>.s.<sid>.ev`: the session's events, published by its owner.
    pub fn session_events(&self, session: &SessionId) -> Result<String, SubjectError> {
        Ok(format!("{}.s.{}.ev", self.prefix, session_token(session)?))
    }

    /// `ab.<cluster>.s.<sid>.in`: inputs for the session, answered by its owner.
    pub fn session_inputs(&self, session: &SessionId) -> Result<String, SubjectError> {
        Ok(format!("{}.s.{}.in", self.prefix, session_token(session)?))
    }

    /// `ab.<cluster>.lifecycle`: every node's lifecycle events.
    pub fn lifecycle(&self) -> String {
        format!("{}.lifecycle", self.prefix)
    }
}

/// The session id as it goes into a subject: verbatim, once it is checked to
/// be a hyphenated UUID (hex digits and `-`, so one token). Verbatim, not
/// re-rendered: every node must derive the same subject from the same id.
fn session_token(session: &SessionId) -> Result<&str, SubjectError> {
    let id = session.0.as_str();
    if id.len() == 36 && uuid::Uuid::try_parse(id).is_ok() {
        Ok(id)
    } else {
        Err(SubjectError::SessionId { id: id.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subjects(name: &str) -> Subjects {
        Subjects::new(&ClusterName::new(name).unwrap())
    }

    const SID: &str = "019ab2c4-1e2f-7a3b-8c4d-5e6f7a8b9c0d";

    #[test]
    fn session_subjects_follow_the_design_layout() {
        let s = subjects("prod-eu_1");
        let sid = SessionId(SID.into());
        assert_eq!(
            s.session_events(&sid).unwrap(),
            format!("ab.prod-eu_1.s.{SID}.ev")
        );
        assert_eq!(
            s.session_inputs(&sid).unwrap(),
            format!("ab.prod-eu_1.s.{SID}.in")
        );
    }

    #[test]
    fn the_lifecycle_subject() {
        let s = subjects("t");
        assert_eq!(s.lifecycle(), "ab.t.lifecycle");
    }

    #[test]
    fn fresh_session_ids_make_subjects() {
        let s = subjects("t");
        for _ in 0..100 {
            let sid = SessionId::new();
            let subject = s.session_events(&sid).unwrap();
            assert_eq!(subject.split('.').count(), 5, "{subject}");
        }
    }

    #[test]
    fn session_ids_that_are_not_hyphenated_uuids_are_refused() {
        let s = subjects("t");
        for bad in [
            "",
            "s1",
            "a.b",
            "*",
            ">",
            "019ab2c41e2f7a3b8c4d5e6f7a8b9c0d",
            "{019ab2c4-1e2f-7a3b-8c4d-5e6f7a8b9c0d}",
            "urn:uuid:019ab2c4-1e2f-7a3b-8c4d-5e6f7a8b9c0d",
            "019ab2c4-1e2f-7a3b-8c4d-5e6f7a8b9c0.",
        ] {
            let sid = SessionId(bad.into());
            let err = s.session_events(&sid).unwrap_err();
            assert_eq!(err, SubjectError::SessionId { id: bad.into() });
            assert!(s.session_inputs(&sid).is_err());
        }
    }
}
