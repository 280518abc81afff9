//! Who may open an HTTP session with the gateway, and which sessions are to go: the caps on
//! sessions (in all and per client address) and the expiry of sessions never initialised.
//! Pure bookkeeping, with the clock passed in, so that the rules are tested without sockets;
//! [`super::sessions`] applies them to rmcp's sessions.
//!
//! The rules, and why:
//!
//! - A session costs the gateway tens of KiB until it ends, and `initialize` is all it takes
//!   to open one. So there are at most [`SessionLimits::max_sessions`] at once, and at most
//!   [`SessionLimits::max_per_peer`] from one client address (an IPv6 address counts by its
//!   /64, which one host usually has whole). A client past a cap is refused, and told when
//!   to try again.
//! - A session whose client never sends `notifications/initialized` (nor any request) within
//!   [`INIT_GRACE`] is closed: a real client does so at once, a flood never does.
//! - When the sessions in all are at their cap, a new session from an address holding at
//!   least two sessions fewer than the busiest one is let in by closing the busiest address's
//!   oldest session not yet initialised. A flood from many addresses (every `127.0.0.x` is one
//!   on Linux) thus makes room for a well-behaved client instead of keeping it out for the
//!   grace, and is itself refused once its addresses hold about equal shares (within one, so
//!   that they do not close each other's sessions in turn). Initialised sessions are never
//!   closed for room.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Sessions open at once, by default.
pub const DEFAULT_MAX_SESSIONS: usize = 512;

/// Sessions open at once from one client address, by default.
pub const DEFAULT_MAX_SESSIONS_PER_PEER: usize = 64;

/// How long a session may stay without `notifications/initialized` (or any request).
pub const INIT_GRACE: Duration = Duration::from_secs(10);

/// What a refused client is told to wait when no session is due to expire sooner.
const RETRY_LATER: Duration = Duration::from_secs(10);

/// The caps on the gateway's HTTP sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Sessions open at once, from every client together.
    pub max_sessions: usize,
    /// Sessions open at once from one client address (an IPv6 address counts by its /64).
    pub max_per_peer: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_per_peer: DEFAULT_MAX_SESSIONS_PER_PEER,
        }
    }
}

/// Where a client connects from, as the per-address cap counts it: its IPv4 address (also
/// when mapped into IPv6), or the /64 of its IPv6 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Peer(IpAddr);

impl Peer {
    /// The peer of a client at `ip`.
    pub(crate) fn of(ip: IpAddr) -> Peer {
        Peer(match ip {
            IpAddr::V4(v4) => IpAddr::V4(v4),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
            },
        })
    }

    /// Clients whose address is not known, counted as one.
    pub(crate) fn unknown() -> Peer {
        Peer(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
    }
}

/// One open session.
#[derive(Debug)]
struct Entry {
    peer: Peer,
    opened: Instant,
    initialized: bool,
}

/// A session may open: this one is to be closed first to make room, if any.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Admitted<K> {
    pub(crate) evicted: Option<K>,
}

/// A session may not open; the client is to try again after this long.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    pub(crate) retry_after: Duration,
}

/// The open sessions (by key `K`), their peers, and the openings under way.
#[derive(Debug)]
pub(crate) struct Admission<K> {
    limits: SessionLimits,
    sessions: HashMap<K, Entry>,
    /// Sessions per peer, openings under way included.
    per_peer: HashMap<Peer, usize>,
    /// Openings admitted whose session has no key yet.
    opening: usize,
}

impl<K: Clone + Eq + Hash> Admission<K> {
    pub(crate) fn new(limits: SessionLimits) -> Self {
        Admission {
            limits,
            sessions: HashMap::new(),
            per_peer: HashMap::new(),
            opening: 0,
        }
    }

    /// Sessions open, openings under way included.
    pub(crate) fn len(&self) -> usize {
        self.sessions.len() + self.opening
    }

    /// Whether `key` is an open session.
    pub(crate) fn contains(&self, key: &K) -> bool {
        self.sessions.contains_key(key)
    }

    /// Let a session from `peer` start opening, or refuse it. An admitted opening counts
    /// until [`opened`](Self::opened) or [`abandoned`](Self::abandoned).
    pub(crate) fn admit(&mut self, peer: Peer, now: Instant) -> Result<Admitted<K>, Refused> {
        let of_peer = self.per_peer.get(&peer).copied().unwrap_or(0);
        if of_peer >= self.limits.max_per_peer {
            return Err(self.refusal(Some(peer), now));
        }
        let mut evicted = None;
        if self.len() >= self.limits.max_sessions {
            let Some(victim) = self.victim(of_peer) else {
                return Err(self.refusal(None, now));
            };
            self.remove(&victim);
            evicted = Some(victim);
        }
        *self.per_peer.entry(peer).or_default() += 1;
        self.opening += 1;
        Ok(Admitted { evicted })
    }

    /// An admitted opening got its session `key`.
    pub(crate) fn opened(&mut self, peer: Peer, key: K, now: Instant) {
        self.opening = self.opening.saturating_sub(1);
        self.sessions.insert(
            key,
            Entry {
                peer,
                opened: now,
                initialized: false,
            },
        );
    }

    /// An admitted opening failed before it got a session.
    pub(crate) fn abandoned(&mut self, peer: Peer) {
        self.opening = self.opening.saturating_sub(1);
        self.release(peer);
    }

    /// Session `key` is in use: it no longer expires for want of initialisation.
    pub(crate) fn initialized(&mut self, key: &K) {
        if let Some(entry) = self.sessions.get_mut(key) {
            entry.initialized = true;
        }
    }

    /// Forget session `key` (closed); whether it was open.
    pub(crate) fn remove(&mut self, key: &K) -> bool {
        match self.sessions.remove(key) {
            Some(entry) => {
                self.release(entry.peer);
                true
            }
            None => false,
        }
    }

    /// Forget, and return, the sessions not initialised within [`INIT_GRACE`].
    pub(crate) fn expire(&mut self, now: Instant) -> Vec<K> {
        let due: Vec<K> = self
            .sessions
            .iter()
            .filter(|(_, entry)| {
                !entry.initialized && now.saturating_duration_since(entry.opened) >= INIT_GRACE
            })
            .map(|(key, _)| key.clone())
            .collect();
        for key in &due {
            self.remove(key);
        }
        due
    }

    fn release(&mut self, peer: Peer) {
        if let Some(count) = self.per_peer.get_mut(&peer) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.per_peer.remove(&peer);
            }
        }
    }

    /// The session to close for room for a peer holding `held` sessions: the oldest not
    /// initialised of the peer holding the most sessions, if that is at least two more.
    fn victim(&self, held: usize) -> Option<K> {
        let holding = |peer: &Peer| self.per_peer.get(peer).copied().unwrap_or(0);
        self.sessions
            .iter()
            .filter(|(_, entry)| !entry.initialized && holding(&entry.peer) > held + 1)
            .max_by_key(|(_, entry)| (holding(&entry.peer), std::cmp::Reverse(entry.opened)))
            .map(|(key, _)| key.clone())
    }

    /// A refusal, with the time until the first session not initialised (of `peer`, or of
    /// anyone) expires.
    fn refusal(&self, peer: Option<Peer>, now: Instant) -> Refused {
        let soonest = self
            .sessions
            .values()
            .filter(|entry| !entry.initialized && peer.is_none_or(|peer| entry.peer == peer))
            .map(|entry| (entry.opened + INIT_GRACE).saturating_duration_since(now))
            .min();
        let wait = soonest.unwrap_or(RETRY_LATER);
        // Whole seconds (the header's unit), at least one.
        Refused {
            retry_after: Duration::from_secs(wait.as_secs_f64().ceil().max(1.0) as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(last: u8) -> Peer {
        Peer::of(IpAddr::from([127, 0, 0, last]))
    }

    fn limits(max_sessions: usize, max_per_peer: usize) -> SessionLimits {
        SessionLimits {
            max_sessions,
            max_per_peer,
        }
    }

    /// Admit and open session `key` from `peer`.
    fn open(admission: &mut Admission<u32>, peer: Peer, key: u32, now: Instant) -> Option<u32> {
        let admitted = admission.admit(peer, now).expect("admitted");
        admission.opened(peer, key, now);
        admitted.evicted
    }

    #[test]
    fn one_address_is_held_to_its_cap_and_told_when_to_retry() {
        let now = Instant::now();
        let mut admission = Admission::new(limits(100, 2));
        open(&mut admission, peer(2), 1, now);
        open(&mut admission, peer(2), 2, now + Duration::from_secs(3));
        let refused = admission
            .admit(peer(2), now + Duration::from_millis(4500))
            .unwrap_err();
        // The first session expires 10 s after it opened: 5.5 s from now, rounded up.
        assert_eq!(refused.retry_after, Duration::from_secs(6));
        // Another address is not held up; a closed session frees its address's place.
        open(&mut admission, peer(3), 3, now);
        assert!(admission.remove(&1));
        open(&mut admission, peer(2), 4, now);
        assert_eq!(admission.len(), 3);
    }

    #[test]
    fn sessions_never_initialised_expire_after_the_grace() {
        let now = Instant::now();
        let mut admission = Admission::new(SessionLimits::default());
        open(&mut admission, peer(2), 1, now);
        open(&mut admission, peer(2), 2, now);
        admission.initialized(&2);
        assert!(admission.expire(now + INIT_GRACE / 2).is_empty());
        assert_eq!(admission.expire(now + INIT_GRACE), vec![1]);
        assert!(!admission.contains(&1) && admission.contains(&2));
        assert_eq!(admission.len(), 1);
    }

    #[test]
    fn at_the_total_cap_the_biggest_flood_makes_room() {
        let now = Instant::now();
        let mut admission = Admission::new(limits(4, 3));
        // Three sessions from .2 (the oldest first), one initialised from .3.
        for key in 1..=3 {
            open(
                &mut admission,
                peer(2),
                key,
                now + Duration::from_secs(key.into()),
            );
        }
        open(&mut admission, peer(3), 4, now);
        admission.initialized(&4);
        // .2 itself gets no more: it already holds the most.
        assert!(admission.admit(peer(2), now).is_err());
        // A newcomer gets in by closing .2's oldest session, twice.
        assert_eq!(open(&mut admission, peer(9), 5, now), Some(1));
        assert_eq!(admission.len(), 4);
        admission.initialized(&5);
        assert_eq!(open(&mut admission, peer(8), 6, now), Some(2));
        admission.initialized(&6);
        // One session each: no address gives way to another; the refused one is told when
        // .2's session expires (opened at 3 s).
        let refused = admission.admit(peer(7), now).unwrap_err();
        assert_eq!(refused.retry_after, INIT_GRACE + Duration::from_secs(3));
        admission.initialized(&3);
        // Every session is initialised now: nothing is closed for room.
        let refused = admission.admit(peer(7), now).unwrap_err();
        assert_eq!(refused.retry_after, RETRY_LATER);
    }

    #[test]
    fn a_flood_from_many_addresses_is_refused_once_their_shares_are_equal() {
        let now = Instant::now();
        let mut admission = Admission::new(limits(6, 64));
        let mut key = 0;
        for _ in 0..2 {
            for last in 2..=4 {
                key += 1;
                assert_eq!(open(&mut admission, peer(last), key, now), None);
            }
        }
        // Two each: no flood address gives way to another.
        for last in 2..=4 {
            assert!(admission.admit(peer(last), now).is_err());
        }
        // A client of its own address gets in.
        assert!(open(&mut admission, peer(1), 100, now).is_some());
        assert_eq!(admission.len(), 6);
        // Now 2, 2, 1 and 1: still no flood address gives way (one less is not enough).
        for last in 2..=4 {
            assert!(admission.admit(peer(last), now).is_err());
        }
    }

    #[test]
    fn an_abandoned_opening_gives_its_place_back() {
        let now = Instant::now();
        let mut admission = Admission::<u32>::new(limits(1, 1));
        admission.admit(peer(2), now).unwrap();
        assert!(
            admission.admit(peer(3), now).is_err(),
            "an opening holds its place"
        );
        admission.abandoned(peer(2));
        assert_eq!(admission.len(), 0);
        assert!(admission.admit(peer(2), now).is_ok());
    }

    #[test]
    fn addresses_count_by_host() {
        let v6 = |text: &str| Peer::of(text.parse().unwrap());
        assert_eq!(v6("2001:db8::1"), v6("2001:db8::ffff:2"));
        assert_ne!(v6("2001:db8::1"), v6("2001:db8:0:1::1"));
        assert_eq!(v6("::ffff:127.0.0.2"), peer(2));
        assert_ne!(peer(2), peer(3));
    }
}
