//! A node's side of its link to the head: whether it is in a cluster (its join token),
//! which client request each message forwarded to the head answers, and the detached
//! actors the head moved here while a worker is leased for them. A sub-machine of
//! [`crate::node::Node`], which decides what to forward and what an answer means.
//!
//! **Must not:** send anything itself (it returns the messages for the node to queue);
//! do IO.

use ares_common::det::DetMap;
use ares_common::wire::{FromHead, TaskSpec, ToHead};
use ares_common::{ActorId, ClientId, RequestId};

use crate::actors::NewActor;

/// A client's request waiting for the head's answer.
#[derive(Debug)]
pub struct Forwarded {
    /// Who asked.
    pub client: ClientId,
    /// Under which ID the client asked.
    pub request_id: RequestId,
    /// What was asked.
    pub what: ForwardedOp,
}

/// What a forwarded request was.
#[derive(Debug)]
pub enum ForwardedOp {
    /// A key-value operation.
    Kv,
    /// A named actor's registration, waiting for its name to be reserved.
    Register(NewActor),
    /// A name not known on this node.
    LookupName(String),
}

/// The node's link to the head (see the module docs).
pub struct HeadLink {
    /// The cluster's join token, in a cluster.
    token: Option<String>,
    /// Requests forwarded to the head, by the ID they went under.
    pending: DetMap<RequestId, Forwarded>,
    /// Detached actors the head moved here, waiting for a worker: lease request → the
    /// actor and its construction.
    adopting: DetMap<RequestId, (ActorId, TaskSpec)>,
    /// The ID of the next message that expects an answer.
    next: RequestId,
}

impl Default for HeadLink {
    fn default() -> Self {
        HeadLink { token: None, pending: DetMap::default(), adopting: DetMap::default(), next: RequestId(1) }
    }
}

impl HeadLink {
    /// Whether the node is part of a cluster (names, KV and jobs are the head's then).
    pub fn in_cluster(&self) -> bool {
        self.token.is_some()
    }

    /// The cluster's join token, in a cluster.
    pub fn token(&self) -> Option<&String> {
        self.token.as_ref()
    }

    /// The node joined a cluster with this token.
    pub fn set_token(&mut self, token: String) {
        self.token = Some(token);
    }

    fn next_id(&mut self) -> RequestId {
        let id = self.next;
        self.next = id.next();
        id
    }

    /// Records `client`'s request and returns the message for the head, built by `msg`
    /// under the ID the answer will name.
    pub fn forward(
        &mut self,
        client: ClientId,
        request_id: RequestId,
        what: ForwardedOp,
        msg: impl FnOnce(RequestId) -> ToHead,
    ) -> ToHead {
        let id = self.next_id();
        self.pending.insert(id, Forwarded { client, request_id, what });
        msg(id)
    }

    /// The request the head's answer `msg` is for, if its client is still waiting.
    pub fn answered(&mut self, msg: &FromHead) -> Option<Forwarded> {
        let id = match msg {
            FromHead::Kv { request_id, .. } | FromHead::ActorName { request_id, .. } => *request_id,
            _ => return None,
        };
        self.pending.remove(&id)
    }

    /// The link is gone: every waiting request, to be failed.
    pub fn lost(&mut self) -> Vec<Forwarded> {
        std::mem::take(&mut self.pending).into_values().collect()
    }

    /// `client` left: its waiting requests are dropped; returns the messages that
    /// release the names its registrations may have reserved meanwhile.
    pub fn client_gone(&mut self, client: ClientId) -> Vec<ToHead> {
        let gone: Vec<RequestId> = self.pending.iter().filter(|(_, f)| f.client == client).map(|(id, _)| *id).collect();
        let mut release = Vec::new();
        for id in gone {
            if let Some(Forwarded { what: ForwardedOp::Register(a), .. }) = self.pending.remove(&id)
                && let Some(name) = a.name
            {
                release.push(ToHead::ReleaseActorName { name, actor_id: a.actor_id });
            }
        }
        release
    }

    /// A detached actor the head moved here waits for a worker: the ID of the node's
    /// own lease request for it.
    pub fn adopt(&mut self, actor_id: ActorId, spec: TaskSpec) -> RequestId {
        let id = self.next_id();
        self.adopting.insert(id, (actor_id, spec));
        id
    }

    /// The adopted actor the node's lease request `id` was for, if any.
    pub fn adopted(&mut self, id: RequestId) -> Option<(ActorId, TaskSpec)> {
        self.adopting.remove(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ares_common::wire::KvOp;

    #[test]
    fn answers_find_their_client_and_a_leaving_client_releases_the_names_it_was_reserving() {
        let mut h = HeadLink::default();
        assert!(!h.in_cluster());
        h.set_token("t".into());
        let (a, b) = (ClientId(1), ClientId(2));
        let kv = h.forward(a, RequestId(7), ForwardedOp::Kv, |id| ToHead::Kv {
            request_id: id,
            op: KvOp::Get { key: "k".into() },
        });
        let ToHead::Kv { request_id: kv_id, .. } = kv else { panic!("{kv:?}") };
        let actor = NewActor {
            actor_id: ActorId([3; 16]),
            class: "C".into(),
            name: Some("n".into()),
            detached: false,
            max_restarts: 0,
            max_task_retries: 0,
        };
        h.forward(b, RequestId(8), ForwardedOp::Register(actor), |id| ToHead::LookupActorName {
            request_id: id,
            name: "n".into(),
        });
        let answer = FromHead::Kv { request_id: kv_id, value: None, error: None };
        let f = h.answered(&answer).expect("client a waits");
        assert_eq!((f.client, f.request_id), (a, RequestId(7)));
        assert!(h.answered(&answer).is_none(), "answered once");
        match &h.client_gone(b)[..] {
            [ToHead::ReleaseActorName { name, .. }] => assert_eq!(name, "n"),
            other => panic!("{other:?}"),
        }
        assert!(h.lost().is_empty(), "nothing left waiting");
        assert!(h.adopted(kv_id).is_none(), "a forwarded request is no adoption");
    }
}
