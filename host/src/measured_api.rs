//! Which API a run measures, as the command line chooses it (`--api`: the driver's calls, the runtime's, or
//! both). The command line parses it and the catalogue in `experiments/` reads it; neither owns it.

use async_lab_core::api::Api;

/// `--api`: which API's cases to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ApiChoice {
    Driver,
    Runtime,
    /// Each case through both APIs, side by side.
    #[default]
    Both,
}

impl ApiChoice {
    pub fn includes(self, api: Api) -> bool {
        matches!(
            (self, api),
            (ApiChoice::Both, _) | (ApiChoice::Driver, Api::Driver) | (ApiChoice::Runtime, Api::Runtime)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_choices_include_their_apis() {
        assert!(ApiChoice::Both.includes(Api::Runtime) && ApiChoice::Both.includes(Api::Driver));
        assert!(!ApiChoice::Driver.includes(Api::Runtime) && !ApiChoice::Runtime.includes(Api::Driver));
    }
}
