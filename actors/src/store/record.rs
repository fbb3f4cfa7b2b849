//! What the store keeps about a session besides its log, how the list of
//! sessions is paged, and what a log tells its record (title, queries).
//! Plain data and pure rules, the same for every backend.

use super::StoreError;
use crate::protocol::{AgentMessage, EventEnvelope, SessionId};
use chrono::{DateTime, Utc};
use serde::Serialize;

/// `SessionRecord::status` while a process holds the lease.
pub const STATUS_ACTIVE: &str = "active";
/// `SessionRecord::status` otherwise.
pub const STATUS_IDLE: &str = "idle";

/// Titles taken from the first user message are at most this many characters.
pub const TITLE_MAX_CHARS: usize = 80;

/// A stored session, without its log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionRecord {
    pub id: SessionId,
    /// From the first user message (see `title_from`); `None` until there
    /// is one.
    pub title: Option<String>,
    pub created_at: DateTime<Utc>,
    /// When an event was last appended (or the session created, forked,
    /// imported).
    pub updated_at: DateTime<Utc>,
    /// The model profile the session uses.
    pub model: String,
    pub workspace: String,
    /// The session this one was forked from, and the parent's seq it was
    /// forked at.
    pub parent: Option<(SessionId, u64)>,
    /// For a sub-agent's session: the parent's `task` call it runs for
    /// (`parent` is then that session, at the seq it had reached). `None`
    /// for a fork.
    pub parent_call: Option<String>,
    /// `active` while a process holds the lease, else `idle`.
    pub status: String,
    /// The process holding the lease.
    pub owner: Option<super::Owner>,
    /// The name of the API token that created it (or forked it from
    /// another); `None` for a session made without one (the command line,
    /// ACP, an import, or a store from before tokens had names).
    pub created_by: Option<String>,
    /// The names of the tokens it was given to follow (see
    /// `SessionStore::set_viewers`): sorted, no name twice.
    pub viewers: Vec<String>,
    /// The highest stored seq (0: no events).
    pub last_seq: u64,
    /// How many events are stored.
    pub event_count: u64,
    /// How many queries it holds (its `user` events).
    pub turns: u64,
    /// Seqs up to this one may have reached clients (see
    /// [`Commit::reserve_seq`](super::Commit::reserve_seq)); the session
    /// continues above it and above `last_seq`.
    #[serde(skip)]
    pub reserved_seq: u64,
    /// The claim this node took when it acquired the session (a node of a
    /// cluster only; `None` when read otherwise).
    #[serde(skip)]
    pub claim: Option<NodeClaim>,
}

/// A node's claim of a session: which node, at which epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeClaim {
    /// The node id.
    pub node: String,
    /// The session's epoch (its fencing token) since this claim.
    pub epoch: u64,
}

impl SessionRecord {
    /// The seq a session loaded again continues after: above every stored
    /// event and every seq a client may have seen.
    pub fn resume_after(&self) -> u64 {
        self.last_seq.max(self.reserved_seq)
    }
}

impl SessionRecord {
    /// For a fork, the parent's seq it was forked at; else the last seq.
    pub fn forked_at(&self) -> u64 {
        self.parent.as_ref().map_or(self.last_seq, |(_, seq)| *seq)
    }
}

/// What a new session starts with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSession {
    pub id: SessionId,
    pub model: String,
    pub workspace: String,
    /// A sub-agent's session: the parent session and its seq, and the
    /// parent's `task` call.
    pub parent: Option<(SessionId, u64)>,
    pub parent_call: Option<String>,
    /// The name of the API token creating it; `None` without one (the
    /// command line, ACP).
    pub created_by: Option<String>,
}

impl NewSession {
    /// Its record as created at `now`, held by `owner` (none for a node's
    /// session, which the node's claim holds): nothing stored yet.
    pub fn record(self, owner: Option<super::Owner>, now: DateTime<Utc>) -> SessionRecord {
        SessionRecord {
            id: self.id,
            title: None,
            created_at: now,
            updated_at: now,
            model: self.model,
            workspace: self.workspace,
            parent: self.parent,
            parent_call: self.parent_call,
            status: STATUS_ACTIVE.to_string(),
            owner,
            created_by: self.created_by,
            viewers: Vec::new(),
            last_seq: 0,
            event_count: 0,
            reserved_seq: 0,
            claim: None,
            turns: 0,
        }
    }
}

/// A session's title, from the text of its first user message: the first
/// non-blank line, cut to [`TITLE_MAX_CHARS`] characters (with an ellipsis).
pub fn title_from(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|line| !line.is_empty())?;
    if line.chars().count() <= TITLE_MAX_CHARS {
        return Some(line.to_string());
    }
    let cut: String = line.chars().take(TITLE_MAX_CHARS - 1).collect();
    Some(format!("{}…", cut.trim_end()))
}

/// Whether `event` is a query's (`SessionRecord::turns` counts them).
pub fn is_query(event: &EventEnvelope) -> bool {
    matches!(event.message, AgentMessage::User(_))
}

/// How many queries `events` hold.
pub fn queries_in(events: &[EventEnvelope]) -> u64 {
    events.iter().filter(|event| is_query(event)).count() as u64
}

/// The title a log gives a session that has none: its first query's.
pub fn title_of_events<'a>(events: impl IntoIterator<Item = &'a EventEnvelope>) -> Option<String> {
    events.into_iter().find_map(|event| match &event.message {
        AgentMessage::User(user) => title_from(&user.text),
        _ => None,
    })
}

/// `events` stamped as session `id`'s (a fork's or an import's copy).
pub fn restamp(events: Vec<EventEnvelope>, id: &SessionId) -> Vec<EventEnvelope> {
    events
        .into_iter()
        .map(|mut event| {
            event.session_id = id.clone();
            event
        })
        .collect()
}

/// Which page of the list of sessions (most recently updated first).
#[derive(Clone, Debug, Default)]
pub struct ListPage {
    /// At most this many (default: all).
    pub limit: Option<usize>,
    /// Only the sessions after this place in the list (the next page).
    pub after: Option<ListCursor>,
    /// Only the sessions this token may see: those it created
    /// (`created_by`) and those it was given to follow (`viewers`).
    /// `None`: every session. The limit and the cursor apply to the
    /// sessions it sees.
    pub visible_to: Option<String>,
}

/// `names` as [`SessionRecord::viewers`] keeps them: sorted, each once.
pub fn viewer_set(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut names: Vec<String> = names.into_iter().collect();
    names.sort();
    names.dedup();
    names
}

/// A place in the list of sessions: just after the session updated at
/// `updated_at` with id `id`. Stable when sessions are updated meanwhile (an
/// updated session moves to the top; the pages after stay as they were).
/// Written `MICROS.ID` (unix microseconds, the session id).
#[derive(Clone, Debug, PartialEq)]
pub struct ListCursor {
    pub updated_at: DateTime<Utc>,
    pub id: SessionId,
}

impl ListCursor {
    /// The place just after `record`.
    pub fn after(record: &SessionRecord) -> Self {
        ListCursor {
            updated_at: record.updated_at,
            id: record.id.clone(),
        }
    }
}

impl std::fmt::Display for ListCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.updated_at.timestamp_micros(), self.id)
    }
}

impl std::str::FromStr for ListCursor {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let expected = "expected the `next` value of a previous page (MICROS.ID)";
        let (micros, id) = s
            .split_once('.')
            .ok_or_else(|| format!("`{s}` is not a list cursor; {expected}"))?;
        let updated_at = micros
            .parse::<i64>()
            .ok()
            .and_then(DateTime::from_timestamp_micros)
            .ok_or_else(|| format!("`{micros}` is not a time in microseconds; {expected}"))?;
        if id.is_empty() {
            return Err(format!("`{s}` names no session; {expected}"));
        }
        Ok(ListCursor {
            updated_at,
            id: SessionId(id.to_string()),
        })
    }
}

/// A stored event's body (its JSON), checked against its row: the event
/// must be event `seq` of session `id`. The same for every backend.
pub fn decode_event(body: &str, id: &SessionId, seq: u64) -> Result<EventEnvelope, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        id: id.0.clone(),
        seq: Some(seq),
        detail,
    };
    let event: EventEnvelope = serde_json::from_str(body)
        .map_err(|e| corrupt(format!("the event does not parse: {e}")))?;
    if event.seq != seq || event.session_id != *id {
        return Err(corrupt(format!(
            "the stored body is event seq {} of session {}",
            event.seq, event.session_id
        )));
    }
    Ok(event)
}
