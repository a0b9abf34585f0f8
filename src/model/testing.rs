//! Models the unit tests of several modules build alike.

use super::ClusterState;
use super::candidate::IdentityMode;
use super::child::ChildNode;
use super::now::Now;
use super::pattern::TreePattern;
use super::tree::Tree;

/// A cluster `c` with `n` elections `/bots/bot_N` of one candidate each
/// (data `dev-N`, one session), listed now.
pub fn bots(n: usize) -> ClusterState {
    let mut tree = Tree::elections(TreePattern::parse("/bots/*").unwrap(), IdentityMode::Data);
    tree.apply_listing(
        (0..n)
            .map(|i| {
                let child = ChildNode {
                    name: "n_0000000001".into(),
                    data: format!("dev-{i}").into_bytes(),
                    ephemeral_owner: 7,
                    ctime_ms: 0,
                };
                (format!("/bots/bot_{i}"), vec![child])
            })
            .collect(),
        Now::current(),
    );
    ClusterState::new("c".into(), vec![tree], true)
}
