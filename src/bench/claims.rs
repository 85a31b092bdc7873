//! What claimers report, whichever way they claim (the claim benchmark's shapes, the agents'
//! cycle): the claims each won and the failures that ended them.

/// What claimers reported: (actor, issue id) for each claim won, and failures.
#[derive(Debug, Default)]
pub(super) struct Claims {
    pub won: Vec<(String, String)>,
    pub failures: usize,
    pub first_error: Option<String>,
}

impl Claims {
    /// These claims, and a failure that ended them.
    pub fn failing(mut self, error: String) -> Claims {
        self.fail(error);
        self
    }

    pub fn failed(error: String) -> Claims {
        let mut claims = Claims::default();
        claims.fail(error);
        claims
    }

    pub fn fail(&mut self, error: String) {
        self.failures += 1;
        self.first_error.get_or_insert(error);
    }

    pub fn merge(&mut self, other: Claims) {
        self.won.extend(other.won);
        self.failures += other.failures;
        if let Some(error) = other.first_error {
            self.first_error.get_or_insert(error);
        }
    }
}
