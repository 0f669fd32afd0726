//! Two players over UDP: GGRS peer-to-peer play driving the simulation ([`run_peer`]). Each peer runs its own
//! world, on whatever backend and thread count it likes; GGRS carries the inputs, predicts the other player's,
//! rolls back and resimulates when a prediction was wrong, and compares the peers' checksums (the digest) of every
//! confirmed frame (desync detection on).
//!
//! A run stops advancing when the frame asked for is confirmed by both players' inputs; it then only answers the
//! other peer until every input it sent is acknowledged (so the other peer can confirm the frame too), or until the
//! timeout if the other peer went away. The digest it
//! reports is the one of that confirmed frame, which is the same on both peers whatever the timing.

use super::rollback::{fingerprint, serve, GgrsConfig, PlayerInput, SyncError, PLAYERS};
use crate::app::App;
use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How a peer plays.
#[derive(Clone, Debug)]
pub struct PeerSettings {
    /// The UDP port this peer listens on.
    pub local_port: u16,
    /// The other peer.
    pub remote: SocketAddr,
    /// This peer's player: 0 or 1.
    pub player: usize,
    /// The frame to reach (confirmed).
    pub frames: u32,
    /// How long to wait for the other peer to answer, at the start and whenever it goes quiet.
    pub timeout: Duration,
}

/// What a peer saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerRun {
    /// The digest of the confirmed frame asked for.
    pub digest: u64,
    /// Rollbacks (loads of an earlier frame).
    pub rollbacks: u64,
    /// Frames simulated in all, resimulations included.
    pub simulated: u64,
    /// The most frames this peer ran ahead of the confirmed one.
    pub deepest_prediction: i32,
    /// The last round-trip time GGRS measured, in ms.
    pub ping_ms: u128,
}

/// Why a peer stopped.
#[derive(Debug)]
pub enum NetError {
    /// The local port could not be bound (in use, say).
    Bind(u16, std::io::Error),
    /// The other peer never answered, or stopped answering.
    NoAnswer {
        /// Whom.
        remote: SocketAddr,
        /// For how long.
        waited: Duration,
        /// The last confirmed frame, if the peers had synchronized.
        at: Option<i32>,
    },
    /// The peers' checksums of a confirmed frame differ.
    Desync {
        /// The frame.
        frame: i32,
        /// This peer's checksum and the other's.
        checksums: (u128, u128),
    },
    /// A rollback or settings problem ([`SyncError`]).
    Sync(SyncError),
}

impl NetError {
    /// The exit status: 1 for a desync (the game went wrong), 2 for what the setup got wrong.
    pub fn status(&self) -> u8 {
        match self {
            NetError::Desync { .. } => 1,
            NetError::Sync(SyncError::Mismatch { .. } | SyncError::Rollback(_)) => 1,
            _ => 2,
        }
    }
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetError::Bind(port, error) => write!(f, "cannot listen on UDP port {port}: {error}"),
            NetError::NoAnswer { remote, waited, at: None } => {
                write!(f, "no answer from {remote} after {} s (is the other peer running?)", waited.as_secs_f32())
            }
            NetError::NoAnswer { remote, waited, at: Some(frame) } => write!(
                f,
                "{remote} stopped answering after confirmed frame {frame} (silent for {} s)",
                waited.as_secs_f32()
            ),
            NetError::Desync { frame, checksums: (local, remote) } => {
                write!(f, "desync at frame {frame}: this peer's checksum {local:016x}, the other's {remote:016x}")
            }
            NetError::Sync(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for NetError {}

impl From<SyncError> for NetError {
    fn from(error: SyncError) -> Self {
        NetError::Sync(error)
    }
}

impl From<ggrs::GgrsError> for NetError {
    fn from(error: ggrs::GgrsError) -> Self {
        NetError::Sync(error.into())
    }
}

/// GGRS's UDP socket, repeating its last sync request while the peers synchronize. GGRS (0.11) sends a new sync
/// request only when it had sent nothing for 200 ms; a peer whose request was lost (the other was not listening
/// yet) keeps answering the other's messages, so it never asks again and never synchronizes. Repeating the request
/// every [`REPEAT`] until GGRS reports them running breaks that: GGRS answers a repeated request again and counts the reply
/// once.
struct RepeatingSocket {
    inner: ggrs::UdpNonBlockingSocket,
    request: Option<(SocketAddr, ggrs::Message)>,
    sent_at: Instant,
    running: std::rc::Rc<std::cell::Cell<bool>>,
}

/// How often a synchronizing peer repeats its sync request.
const REPEAT: Duration = Duration::from_millis(100);

impl ggrs::NonBlockingSocket<SocketAddr> for RepeatingSocket {
    fn send_to(&mut self, msg: &ggrs::Message, addr: &SocketAddr) {
        self.inner.send_to(msg, addr);
        // (The message's kind is not public: its debug form names it.)
        if !self.running.get() && format!("{msg:?}").contains("SyncRequest") {
            self.request = Some((*addr, msg.clone()));
            self.sent_at = Instant::now();
        }
    }

    fn receive_all_messages(&mut self) -> Vec<(SocketAddr, ggrs::Message)> {
        if let Some((addr, msg)) = self.request.as_ref().filter(|_| !self.running.get()) {
            if self.sent_at.elapsed() >= REPEAT {
                self.inner.send_to(msg, addr);
                self.sent_at = Instant::now();
            }
        }
        self.inner.receive_all_messages()
    }
}

/// How long a peer keeps answering at least after its last frame is confirmed (acknowledging the other's inputs).
const LINGER: Duration = Duration::from_millis(100);

/// Plays `settings.frames` frames of `app` against the other peer; `script` gives this player's input per frame.
pub fn run_peer(
    app: &mut App,
    settings: &PeerSettings,
    script: impl Fn(u32) -> PlayerInput,
) -> Result<PeerRun, NetError> {
    let inner = ggrs::UdpNonBlockingSocket::bind_to_port(settings.local_port)
        .map_err(|error| NetError::Bind(settings.local_port, error))?;
    let running = std::rc::Rc::new(std::cell::Cell::new(false));
    let socket = RepeatingSocket { inner, request: None, sent_at: Instant::now(), running: running.clone() };
    let (local, remote) = (settings.player, 1 - settings.player.min(1));
    let mut session = ggrs::SessionBuilder::<GgrsConfig>::new()
        .with_num_players(PLAYERS)
        .with_desync_detection_mode(ggrs::DesyncDetection::On { interval: 1 })
        .with_disconnect_timeout(settings.timeout)
        .add_player(ggrs::PlayerType::Local, local)?
        .add_player(ggrs::PlayerType::Remote(settings.remote), remote)?
        .start_p2p_session(socket)?;
    let fingerprint = fingerprint(&app.world);
    let target = settings.frames as i32;
    let mut run = PeerRun { digest: 0, rollbacks: 0, simulated: 0, deepest_prediction: 0, ping_ms: 0 };
    let mut digests: HashMap<i32, u64> = HashMap::new();
    let started = Instant::now();
    let mut done: Option<Instant> = None;
    loop {
        session.poll_remote_clients();
        let events: Vec<_> = session.events().collect();
        for event in events {
            match event {
                ggrs::GgrsEvent::DesyncDetected { frame, local_checksum, remote_checksum, .. } => {
                    return Err(NetError::Desync { frame, checksums: (local_checksum, remote_checksum) })
                }
                ggrs::GgrsEvent::Disconnected { .. } if done.is_none() => {
                    let at = Some(session.confirmed_frame());
                    return Err(NetError::NoAnswer { remote: settings.remote, waited: settings.timeout, at });
                }
                _ => {}
            }
        }
        if let Some(since) = done {
            // Only answering now: done once the other peer acknowledged every input sent (it has what it needs to
            // confirm the frame too), or after the timeout if it went away.
            let acknowledged = session.network_stats(remote).is_ok_and(|stats| stats.send_queue_len == 0);
            if (acknowledged && since.elapsed() >= LINGER) || since.elapsed() >= settings.timeout {
                return Ok(run);
            }
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        running.set(session.current_state() == ggrs::SessionState::Running);
        if !running.get() {
            if started.elapsed() >= settings.timeout {
                return Err(NetError::NoAnswer { remote: settings.remote, waited: settings.timeout, at: None });
            }
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        let frame = session.current_frame();
        let input = if frame < target { script(frame as u32) } else { PlayerInput::default() };
        session.add_local_input(local, PlayerInput { settings: fingerprint, ..input })?;
        match session.advance_frame() {
            Ok(requests) => {
                for request in requests {
                    match &request {
                        ggrs::GgrsRequest::LoadGameState { .. } => run.rollbacks += 1,
                        ggrs::GgrsRequest::AdvanceFrame { .. } => run.simulated += 1,
                        ggrs::GgrsRequest::SaveGameState { .. } => {}
                    }
                    if let Some((frame, digest)) = serve(app, request, fingerprint)? {
                        digests.insert(frame, digest);
                    }
                }
            }
            // Too far ahead of the other peer's inputs: wait for them.
            Err(ggrs::GgrsError::PredictionThreshold) => std::thread::sleep(Duration::from_millis(1)),
            Err(error) => return Err(error.into()),
        }
        let (current, confirmed) = (session.current_frame(), session.confirmed_frame());
        run.deepest_prediction = run.deepest_prediction.max(current - confirmed.max(0));
        if done.is_none() && confirmed >= target && current > target {
            run.digest = *digests.get(&target).expect("the target frame was saved");
            if let Ok(stats) = session.network_stats(remote) {
                run.ping_ms = stats.ping;
            }
            done = Some(Instant::now());
        }
    }
}
