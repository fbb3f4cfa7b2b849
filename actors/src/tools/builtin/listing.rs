//! The output of the tools that list paths (`list_dir`, `glob`): one line
//! each up to a cap, what to do when there are more, and how many could not
//! be read — worded the same way by both.

/// The lines in order, at most `max`; `empty` when there are none; a
/// marker naming how many `more` were left out and the `hint` to narrow
/// the listing; the count of `unreadable` ones, if any, as `what`.
pub(crate) struct Listing<'a> {
    pub empty: String,
    pub max: usize,
    /// What is left out beyond the cap: "matching files", "entries".
    pub more: &'a str,
    pub hint: &'a str,
    /// What could not be read: "paths", "entries".
    pub what: &'a str,
}

impl Listing<'_> {
    /// The tool's output text.
    pub(crate) fn render<S: AsRef<str>>(&self, lines: &[S], unreadable: usize) -> String {
        let mut out = String::new();
        if lines.is_empty() {
            out.push_str(&self.empty);
            out.push('\n');
        }
        for line in lines.iter().take(self.max) {
            out.push_str(line.as_ref());
            out.push('\n');
        }
        if lines.len() > self.max {
            out.push_str(&format!(
                "[... {} more {} not shown; {}]\n",
                lines.len() - self.max,
                self.more,
                self.hint
            ));
        }
        if unreadable > 0 {
            out.push_str(&format!("[{unreadable} {} could not be read]\n", self.what));
        }
        out
    }
}
