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
    /// The frame to reach (confirmed); `None`: play until stopped.
    pub frames: Option<u32>,
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
    let mut peer = Peer::start(app, settings)?;
    loop {
        match peer.step(app, &script)? {
            Progress::Done(run) => return Ok(run),
            Progress::Advanced => {}
            // Nothing to do before the next message: not a busy loop.
            Progress::Syncing | Progress::Waiting | Progress::Finishing => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// What a [`Peer::step`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The peers are still synchronizing (nothing ran).
    Syncing,
    /// A frame was advanced (with any rollback GGRS asked for first).
    Advanced,
    /// Too far ahead of the other peer's inputs, or GGRS recommended waiting: nothing ran.
    Waiting,
    /// The frame asked for is confirmed; answering the other peer until it has every input.
    Finishing,
    /// Done: the frame asked for, confirmed, and its digest.
    Done(PeerRun),
}

/// One of two peers, stepped by its caller: [`run_peer`] in a loop, the window once per fixed step.
pub struct Peer {
    p2p: ggrs::P2PSession<GgrsConfig>,
    running: std::rc::Rc<std::cell::Cell<bool>>,
    settings: PeerSettings,
    local: usize,
    remote: usize,
    fingerprint: u32,
    /// The digest of each frame saved since the confirmed one (what the target's digest is read from).
    digests: HashMap<i32, u64>,
    run: PeerRun,
    started: Instant,
    done: Option<Instant>,
    /// Frames GGRS recommended to wait (this peer ran ahead).
    skip: u32,
}

impl Peer {
    /// Binds the port and starts GGRS with the other peer (nothing is sent yet).
    pub fn start(app: &App, settings: &PeerSettings) -> Result<Self, NetError> {
        let inner = ggrs::UdpNonBlockingSocket::bind_to_port(settings.local_port)
            .map_err(|error| NetError::Bind(settings.local_port, error))?;
        let running = std::rc::Rc::new(std::cell::Cell::new(false));
        let socket = RepeatingSocket { inner, request: None, sent_at: Instant::now(), running: running.clone() };
        let (local, remote) = (settings.player, 1 - settings.player.min(1));
        let p2p = ggrs::SessionBuilder::<GgrsConfig>::new()
            .with_num_players(PLAYERS)
            .with_desync_detection_mode(ggrs::DesyncDetection::On { interval: 1 })
            .with_disconnect_timeout(settings.timeout)
            .add_player(ggrs::PlayerType::Local, local)?
            .add_player(ggrs::PlayerType::Remote(settings.remote), remote)?
            .start_p2p_session(socket)?;
        Ok(Self {
            p2p,
            running,
            settings: settings.clone(),
            local,
            remote,
            fingerprint: fingerprint(&app.world),
            digests: HashMap::new(),
            run: PeerRun { digest: 0, rollbacks: 0, simulated: 0, deepest_prediction: 0, ping_ms: 0 },
            started: Instant::now(),
            done: None,
            skip: 0,
        })
    }

    /// Polls the other peer, then (synchronized, and short of the frame asked for) adds this player's input for
    /// the current frame (`input` is asked with it) and advances a frame, serving GGRS's requests on `app`.
    pub fn step(&mut self, app: &mut App, input: impl FnOnce(u32) -> PlayerInput) -> Result<Progress, NetError> {
        let p2p = &mut self.p2p;
        p2p.poll_remote_clients();
        let events: Vec<_> = p2p.events().collect();
        for event in events {
            match event {
                ggrs::GgrsEvent::DesyncDetected { frame, local_checksum, remote_checksum, .. } => {
                    return Err(NetError::Desync { frame, checksums: (local_checksum, remote_checksum) })
                }
                ggrs::GgrsEvent::Disconnected { .. } if self.done.is_none() => {
                    let at = Some(p2p.confirmed_frame());
                    return Err(NetError::NoAnswer { remote: self.settings.remote, waited: self.settings.timeout, at });
                }
                ggrs::GgrsEvent::WaitRecommendation { skip_frames } => self.skip = self.skip.max(skip_frames),
                _ => {}
            }
        }
        if let Some(since) = self.done {
            // Only answering now: done once the other peer acknowledged every input sent (it has what it needs to
            // confirm the frame too), or after the timeout if it went away.
            let acknowledged = p2p.network_stats(self.remote).is_ok_and(|stats| stats.send_queue_len == 0);
            if (acknowledged && since.elapsed() >= LINGER) || since.elapsed() >= self.settings.timeout {
                return Ok(Progress::Done(self.run));
            }
            return Ok(Progress::Finishing);
        }
        self.running.set(p2p.current_state() == ggrs::SessionState::Running);
        if !self.running.get() {
            if self.started.elapsed() >= self.settings.timeout {
                let (remote, waited) = (self.settings.remote, self.settings.timeout);
                return Err(NetError::NoAnswer { remote, waited, at: None });
            }
            return Ok(Progress::Syncing);
        }
        if let Ok(stats) = p2p.network_stats(self.remote) {
            self.run.ping_ms = stats.ping;
        }
        if self.skip > 0 {
            self.skip -= 1;
            return Ok(Progress::Waiting);
        }
        let frame = p2p.current_frame();
        let target = self.settings.frames.map_or(i32::MAX, |frames| frames as i32);
        let input = if frame < target { input(frame as u32) } else { PlayerInput::default() };
        p2p.add_local_input(self.local, PlayerInput { settings: self.fingerprint, ..input })?;
        let progress = match p2p.advance_frame() {
            Ok(requests) => {
                for request in requests {
                    match &request {
                        ggrs::GgrsRequest::LoadGameState { .. } => self.run.rollbacks += 1,
                        ggrs::GgrsRequest::AdvanceFrame { .. } => self.run.simulated += 1,
                        ggrs::GgrsRequest::SaveGameState { .. } => {}
                    }
                    if let Some((frame, digest)) = serve(app, request, self.fingerprint)? {
                        self.digests.insert(frame, digest);
                    }
                }
                Progress::Advanced
            }
            // Too far ahead of the other peer's inputs: wait for them.
            Err(ggrs::GgrsError::PredictionThreshold) => Progress::Waiting,
            Err(error) => return Err(error.into()),
        };
        let (current, confirmed) = (p2p.current_frame(), p2p.confirmed_frame());
        self.run.deepest_prediction = self.run.deepest_prediction.max(current - confirmed.max(0));
        if confirmed >= target && current > target {
            self.run.digest = *self.digests.get(&target).expect("the target frame was saved");
            self.done = Some(Instant::now());
        }
        // Only frames not yet confirmed can be asked for again.
        self.digests.retain(|frame, _| *frame >= confirmed.min(target));
        Ok(progress)
    }

    /// What the overlay shows: the frame, the confirmed frame, and what [`PeerRun`] counts so far.
    pub fn stats(&self) -> PeerStats {
        PeerStats {
            player: self.local,
            remote: self.settings.remote,
            frame: self.p2p.current_frame(),
            confirmed: self.p2p.confirmed_frame(),
            run: self.run,
            synchronized: self.running.get(),
        }
    }
}

impl PeerRun {
    /// The line a finished peer prints (headless and window alike): who it was, what it did, and the digest.
    pub fn summary(&self, player: usize, backend: crate::ecs::Backend, threads: usize, frames: u32) -> String {
        format!(
            "p2p player {player} ({backend}, {}): frame {frames} confirmed; {}, {} simulated, predicted up to {} \
             ahead, ping {} ms; digest {:016x}",
            counted(threads as u64, "thread"),
            counted(self.rollbacks, "rollback"),
            counted(self.simulated, "frame"),
            counted(self.deepest_prediction.max(0) as u64, "frame"),
            self.ping_ms,
            self.digest
        )
    }
}

/// `n` and `noun`, plural unless `n` is 1: "1 rollback", "3 rollbacks".
pub fn counted(n: u64, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::counted;

    #[test]
    fn one_is_singular_and_the_rest_plural() {
        assert_eq!(counted(0, "rollback"), "0 rollbacks");
        assert_eq!(counted(1, "rollback"), "1 rollback");
        assert_eq!(counted(2, "thread"), "2 threads");
    }
}

/// A peer's figures as it runs ([`Peer::stats`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerStats {
    /// This peer's player.
    pub player: usize,
    /// The other peer.
    pub remote: SocketAddr,
    /// The frame being run.
    pub frame: i32,
    /// The last frame both players' inputs are known for.
    pub confirmed: i32,
    /// Rollbacks, frames simulated, deepest prediction and the last ping so far (`digest`: 0 until done).
    pub run: PeerRun,
    /// Whether the peers have synchronized.
    pub synchronized: bool,
}

impl PeerStats {
    /// How many frames this peer runs ahead of the confirmed one (on predicted inputs).
    pub fn prediction(&self) -> i32 {
        self.frame - self.confirmed.max(0)
    }
}
