//! A game through GGRS in the window: `--synctest K` (clicks are red's bursts, blue's are scripted; every frame is
//! rolled back K frames and resimulated) or `--p2p` (clicks are this player's bursts, sent to the other peer).
//! The window steps it once per fixed step instead of running a frame itself; its figures go in a box at the top.
//! Only clicks travel: inputs that change the world otherwise are refused, switching the backend or the thread
//! count is not (neither changes a value, so the peers stay in sync).

use glam::Vec2;
use std::fmt::Write;
use std::time::Duration;
use swarm::app::App;
use swarm::cli::Cli;
use swarm::sim::net::{counted, Peer, PeerRun, PeerSettings, Progress};
use swarm::sim::play::Input;
use swarm::sim::rollback::{scripted_input, PlayerInput, SyncTester};
use swarm::sim::SimConfig;

/// What runs the frames: a sync test, or one of two peers.
enum Link {
    Sync(Box<SyncTester>),
    Peer(Box<Peer>),
}

/// A GGRS game in the window: what runs its frames, the click waiting for the next frame, and how it ended.
pub struct NetPlay {
    link: Link,
    click: Option<Vec2>,
    /// Why it stopped, and the exit status that says so.
    failed: Option<(String, u8)>,
    /// A peer's run, once the frame asked for (`--frames`) is confirmed.
    done: Option<PeerRun>,
    frames: Option<u32>,
}

impl NetPlay {
    /// The GGRS game the flags ask for, if any; `Err` with the message and exit status when it cannot start (a port
    /// in use).
    pub fn start(cli: &Cli, app: &App) -> Result<Option<Self>, (String, u8)> {
        let link = if let Some(distance) = cli.synctest {
            let tester = SyncTester::new(app, distance as usize).map_err(|e| (format!("synctest: {e}"), 2))?;
            Link::Sync(Box::new(tester))
        } else if cli.p2p {
            let settings = PeerSettings {
                local_port: cli.local_port.unwrap_or_default(),
                remote: cli.remote.expect("--p2p requires --remote"),
                player: cli.player.unwrap_or(0) as usize,
                frames: cli.frames,
                timeout: Duration::from_secs(cli.timeout),
            };
            let peer = Peer::start(app, &settings).map_err(|e| (format!("p2p: {e}"), e.status()))?;
            Link::Peer(Box::new(peer))
        } else {
            return Ok(None);
        };
        Ok(Some(Self { link, click: None, failed: None, done: None, frames: cli.frames }))
    }

    /// Whether `input` may be applied: a burst is taken here (the next frame's click), switching the backend,
    /// the threads or the draw order changes no value; a sync test may also pause and step.
    pub fn allows(&self, input: &Input) -> bool {
        match input {
            Input::Backend(_) | Input::Threads(_) | Input::DrawOrder(_) => true,
            Input::Pause(_) | Input::Step => matches!(self.link, Link::Sync(_)),
            _ => false,
        }
    }

    /// A click: this player's burst in the next frame (a second click before it replaces the first).
    pub fn click(&mut self, at: Vec2) {
        self.click = Some(at);
    }

    /// One step of the game on `app`: a frame of the sync test, or a peer's step (which may wait for the other
    /// peer). Nothing once it stopped or finished.
    pub fn step(&mut self, app: &mut App) {
        if self.failed.is_some() || self.done.is_some() {
            return;
        }
        match &mut self.link {
            Link::Sync(tester) => {
                let arena = app.world.resource::<SimConfig>().arena;
                let blue = scripted_input(arena, tester.tested().frames, 1);
                if let Err(error) = tester.advance(app, [PlayerInput::burst(self.click.take()), blue]) {
                    self.failed = Some((format!("synctest: {error}"), 1));
                }
            }
            Link::Peer(peer) => {
                let mut taken = None;
                let click = &mut self.click;
                match peer.step(app, |_| {
                    taken = click.take();
                    PlayerInput::burst(taken)
                }) {
                    Ok(Progress::Done(run)) => self.done = Some(run),
                    Ok(_) => {}
                    Err(error) => self.failed = Some((format!("p2p: {error}"), error.status())),
                }
            }
        }
    }

    /// Why it stopped, and the exit status, if it did.
    pub fn failed(&self) -> Option<&(String, u8)> {
        self.failed.as_ref()
    }

    /// Whether a peer has the frame asked for confirmed (and the other peer has every input): the run is over.
    pub fn finished(&self) -> bool {
        self.done.is_some()
    }

    /// The line printed when the window closes: the peer's or the sync test's, as the headless run prints it.
    pub fn summary(&self, app: &App) -> Option<String> {
        if self.failed.is_some() {
            return None;
        }
        let (backend, threads) = (app.world.backend(), app.threads());
        match &self.link {
            Link::Peer(peer) => {
                let run = self.done?;
                Some(run.summary(peer.stats().player, backend, threads, self.frames.unwrap_or_default()))
            }
            Link::Sync(tester) => {
                let digest = swarm::sim::digest(&app.world);
                Some(tester.tested().summary(backend, threads, tester.distance(), digest, None))
            }
        }
    }

    /// The box's two lines, written into `text`; returns where the second starts. The first says what runs (or
    /// why it stopped); the second the rollback figures: frames rolled back, how far ahead of the confirmed frame
    /// this peer predicts, the ping.
    pub fn lines(&self, text: &mut String) -> usize {
        text.clear();
        if let Some((why, status)) = &self.failed {
            let _ = write!(text, "GGRS game stopped: Esc quits (exit status {status})");
            let first = text.len();
            let _ = write!(text, "{why}");
            return first;
        }
        match &self.link {
            Link::Sync(tester) => {
                let tested = tester.tested();
                let _ = write!(text, "GGRS sync test: click for a red burst, blue's are scripted");
                let first = text.len();
                let _ = write!(
                    text,
                    "frame {}: {} of {}, {} simulated, no desync",
                    tested.frames,
                    counted(tested.loads, "rollback"),
                    counted(tester.distance() as u64, "frame"),
                    counted(tested.simulated, "frame")
                );
                first
            }
            Link::Peer(peer) => {
                let stats = peer.stats();
                let team = if stats.player == 0 { "red" } else { "blue" };
                if !stats.synchronized {
                    let _ = write!(text, "GGRS p2p: player {} ({team}), waiting for {}", stats.player, stats.remote);
                    let first = text.len();
                    let _ = write!(text, "start the other peer with --player {}", 1 - stats.player);
                    return first;
                }
                let _ =
                    write!(text, "GGRS p2p: you are {team} (player {}), ping {} ms", stats.player, stats.run.ping_ms);
                let first = text.len();
                let run = stats.run;
                let resimulated = run.simulated.saturating_sub(stats.frame.max(0) as u64);
                let _ = write!(
                    text,
                    "frame {} (confirmed {}): {} ahead, deepest {}; {}, {} again",
                    stats.frame,
                    stats.confirmed.max(0),
                    stats.prediction(),
                    run.deepest_prediction,
                    counted(run.rollbacks, "rollback"),
                    counted(resimulated, "frame"),
                );
                if self.done.is_some() {
                    let _ = write!(text, "; done");
                }
                first
            }
        }
    }
}
