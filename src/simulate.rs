//! `simulate`: real ZooKeeper sessions competing in elections, with masters
//! killed at a steady rate. The demo and the benchmarks use it.
//!
//! Candidates are spread over a pool of sessions, each standing for one
//! process: candidate `j` of election `i` lives in session `(i*M + j) % K`.
//! With `--style node` an election is one EPHEMERAL `leader` node: the
//! candidate that creates it is master, the others retry every 100 ms. With
//! `--style lock` each election is a lock whose holder releases it after up
//! to a second and queues again. With `--style exclusive` only the master
//! keeps its node: standbys withdraw theirs and register again (every 100
//! ms) once the election has no master.
//! Killing a master kills its whole session, by closing it (nodes vanish at
//! once) or abandoning it (nodes stay until the session expires); the session
//! then comes back as a new process and rejoins its elections at the back.

use std::collections::{BTreeMap, HashMap};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use futures::future::join_all;
use zookeeper_client::{Acls, Client, CreateMode, Error};

use crate::cli::{SimStyle, SimulateArgs};

/// Default cap on simulated sessions: ZooKeeper's `maxClientCnxns` is 60
/// connections per client address by default.
const MAX_DEFAULT_SESSIONS: usize = 50;
/// Creates issued concurrently per session.
const CREATE_CHUNK: usize = 500;

/// Tiny xorshift generator: the simulator needs no cryptographic randomness
/// and this keeps a dependency out.
struct Rng(u64);

impl Rng {
    fn seeded() -> Self {
        let seed = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0x9e37_79b9, |d| {
                u64::try_from(d.as_nanos() % (1u128 << 64)).unwrap_or(0x9e37_79b9)
            });
        Self(seed | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        // n fits in u64, and a remainder below n fits back in usize.
        usize::try_from(self.next() % u64::try_from(n).unwrap_or(u64::MAX)).unwrap_or(0)
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 10_000) as f64 / 10_000.0 < p
    }
}

struct Sim {
    args: SimulateArgs,
    sessions: usize,
    /// Live client and generation per session slot.
    clients: Vec<Option<(Client, bool)>>,
    generation: Vec<u32>,
    /// Per election: sequence -> session slot of its live candidates.
    owners: Vec<BTreeMap<i64, usize>>,
    /// Lock style: the holder of each lock and since when.
    held: Vec<Option<(i64, Instant)>>,
    /// Exclusive style: sessions that withdrew from each election.
    waiting: Vec<Vec<usize>>,
    rng: Rng,
}

fn election_path(base: &str, i: usize) -> String {
    format!("{}/bot_{i:05}", base.trim_end_matches('/'))
}

async fn connect(zk: &str, timeout: Duration, detached: bool) -> Result<Client, Error> {
    let mut c = Client::connector().with_session_timeout(timeout);
    if detached {
        c = c.with_detached();
    }
    c.connect(zk).await
}

impl Sim {
    /// Candidates (election, slot-in-election) assigned to session `k`.
    fn assigned(&self, k: usize) -> Vec<usize> {
        let m = self.args.candidates;
        (0..self.args.elections * m)
            .filter(|c| c % self.sessions == k)
            .map(|c| c / m)
            .collect()
    }

    /// The name prefix of session `k`'s candidates (kazoo's `<id>__lock__`
    /// for locks).
    fn prefix(&self, k: usize) -> String {
        match self.args.style {
            SimStyle::Lock => format!("sim{k}g{}__lock__", self.generation[k]),
            _ => "instance_".to_owned(),
        }
    }

    /// Lock style: every holder that has held its lock long enough deletes
    /// its node and queues again with a new one.
    async fn release(&mut self, now: Instant) {
        for i in 0..self.args.elections {
            let Some((&seq, &k)) = self.owners[i].first_key_value() else {
                continue;
            };
            let since = *self.held[i].get_or_insert((seq, now));
            if since.0 != seq {
                self.held[i] = Some((seq, now));
                continue;
            }
            if now.duration_since(since.1) < Duration::from_millis(200 + self.rng.below(800) as u64)
            {
                continue;
            }
            let Some((client, _)) = &self.clients[k] else {
                continue;
            };
            let parent = election_path(&self.args.path, i);
            let name = format!("{}{seq:010}", self.prefix(k));
            if client
                .delete(&format!("{parent}/{name}"), None)
                .await
                .is_err()
            {
                continue;
            }
            self.owners[i].remove(&seq);
            self.held[i] = None;
            let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
            let identity = format!("sim-process-{k}-gen{}", self.generation[k]);
            if let Ok((_, next)) = client
                .create(
                    &format!("{parent}/{}", self.prefix(k)),
                    identity.as_bytes(),
                    &options,
                )
                .await
            {
                self.owners[i].insert(next.into_i64(), k);
            }
        }
    }

    /// Exclusive style: standbys withdraw their nodes; in elections without
    /// a master the live ones that withdrew register again.
    async fn exclusive(&mut self) {
        for i in 0..self.args.elections {
            if self.owners[i].is_empty() {
                let waiting = std::mem::take(&mut self.waiting[i]);
                for k in waiting {
                    let Some((client, _)) = &self.clients[k] else {
                        continue;
                    };
                    let parent = election_path(&self.args.path, i);
                    let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
                    let identity = format!("sim-process-{k}-gen{}", self.generation[k]);
                    if let Ok((_, seq)) = client
                        .create(
                            &format!("{parent}/instance_"),
                            identity.as_bytes(),
                            &options,
                        )
                        .await
                    {
                        self.owners[i].insert(seq.into_i64(), k);
                    }
                }
            }
            let standbys: Vec<(i64, usize)> = self.owners[i]
                .iter()
                .skip(1)
                .map(|(s, k)| (*s, *k))
                .collect();
            for (seq, k) in standbys {
                let Some((client, _)) = &self.clients[k] else {
                    continue;
                };
                let node = format!("{}/instance_{seq:010}", election_path(&self.args.path, i));
                if client.delete(&node, None).await.is_ok() {
                    self.owners[i].remove(&seq);
                    self.waiting[i].push(k);
                }
            }
        }
    }

    /// Sessions holding a candidate of election `i`.
    fn candidates_of(&self, i: usize) -> Vec<usize> {
        let m = self.args.candidates;
        (0..m).map(|j| (i * m + j) % self.sessions).collect()
    }

    /// Node style: a live candidate session of every masterless election
    /// tries to create its `leader` node (it fails while an abandoned
    /// master's node waits for expiry).
    async fn claim(&mut self) {
        for i in 0..self.args.elections {
            if !self.owners[i].is_empty() {
                continue;
            }
            let live: Vec<usize> = self
                .candidates_of(i)
                .into_iter()
                .filter(|k| self.clients[*k].is_some())
                .collect();
            if live.is_empty() {
                continue;
            }
            let k = live[self.rng.below(live.len())];
            let Some((client, _)) = &self.clients[k] else {
                continue;
            };
            let identity = format!("sim-process-{k}-gen{}", self.generation[k]);
            let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
            let node = format!("{}/leader", election_path(&self.args.path, i));
            if client
                .create(&node, identity.as_bytes(), &options)
                .await
                .is_ok()
            {
                self.owners[i].insert(0, k);
            }
        }
    }

    /// Starts session `k` and creates its candidates (node style: it only
    /// joins the pool that [`Sim::claim`] draws from).
    async fn start_session(&mut self, k: usize) -> Result<(), Error> {
        let detached = self.rng.chance(self.args.abandon_ratio);
        let client = connect(&self.args.zk, self.args.session_timeout, detached).await?;
        self.generation[k] += 1;
        for waiting in &mut self.waiting {
            waiting.retain(|w| *w != k);
        }
        if self.args.style == SimStyle::Node {
            self.clients[k] = Some((client, detached));
            return Ok(());
        }
        let identity = format!("sim-process-{k}-gen{}", self.generation[k]);
        let elections = self.assigned(k);
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let prefix = self.prefix(k);
        for chunk in elections.chunks(CREATE_CHUNK) {
            let paths: Vec<String> = chunk
                .iter()
                .map(|i| format!("{}/{prefix}", election_path(&self.args.path, *i)))
                .collect();
            let results = join_all(
                paths
                    .iter()
                    .map(|p| client.create(p, identity.as_bytes(), &options)),
            )
            .await;
            for (i, r) in chunk.iter().zip(results) {
                let (_, seq) = r?;
                self.owners[*i].insert(seq.into_i64(), k);
            }
        }
        self.clients[k] = Some((client, detached));
        Ok(())
    }

    /// Kills the session that is master of a random election. Returns the
    /// session, whether it was abandoned, and how many elections it was
    /// master of: each of those switches once another candidate leads.
    fn kill_random_master(&mut self) -> Option<(usize, bool, u64)> {
        let i = self.rng.below(self.args.elections);
        let (_, k) = self.owners[i].first_key_value()?;
        let k = *k;
        let (client, detached) = self.clients[k].take()?;
        let masterships = self
            .owners
            .iter()
            .filter(|o| o.first_key_value().is_some_and(|(_, owner)| *owner == k))
            .count() as u64;
        // Dropping a detached client abandons its session (nodes live until
        // expiry); dropping a normal one closes it (nodes vanish at once).
        drop(client);
        for owners in &mut self.owners {
            owners.retain(|_, owner| *owner != k);
        }
        Some((k, detached, masterships))
    }
}

/// Runs the simulation; returns the process exit code.
pub async fn run(args: SimulateArgs) -> ExitCode {
    if args.elections == 0 || args.candidates == 0 {
        eprintln!("simulate: --elections and --candidates must be at least 1");
        return ExitCode::from(2);
    }
    if !(0.0..=1.0).contains(&args.abandon_ratio)
        || args.kill_rate < 0.0
        || !args.kill_rate.is_finite()
    {
        eprintln!("simulate: --abandon-ratio must be within 0..1 and --kill-rate >= 0");
        return ExitCode::from(2);
    }
    match simulate(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("simulate: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The persistent election nodes, created by an admin session (those
/// there already stay).
async fn lay_out(args: &SimulateArgs) -> Result<(), String> {
    let admin = connect(&args.zk, Duration::from_secs(10), false)
        .await
        .map_err(|e| format!("cannot connect to {}: {e}", args.zk))?;
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    match admin.mkdir(&args.path, &persistent).await {
        Ok(()) | Err(Error::NodeExists) => {}
        Err(e) => return Err(format!("cannot create {}: {e}", args.path)),
    }
    let paths: Vec<String> = (0..args.elections)
        .map(|i| election_path(&args.path, i))
        .collect();
    for chunk in paths.chunks(CREATE_CHUNK) {
        for r in join_all(chunk.iter().map(|p| admin.create(p, b"", &persistent))).await {
            match r {
                Ok(_) | Err(Error::NodeExists) => {}
                Err(e) => return Err(format!("cannot create elections under {}: {e}", args.path)),
            }
        }
    }
    Ok(())
}

impl Sim {
    /// Every 100 ms: the style's own moves (claiming a free node, releasing
    /// a held lock, standbys re-registering), then the sessions whose
    /// restart is due.
    async fn step(&mut self, revive: &mut HashMap<usize, tokio::time::Instant>) {
        match self.args.style {
            SimStyle::Node => self.claim().await,
            SimStyle::Lock => self.release(Instant::now()).await,
            SimStyle::Exclusive => self.exclusive().await,
            SimStyle::Sequential => {}
        }
        let now = tokio::time::Instant::now();
        let due: Vec<usize> = revive
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(k, _)| *k)
            .collect();
        for k in due {
            revive.remove(&k);
            if let Err(e) = self.start_session(k).await {
                eprintln!("simulate: restarting session {k} failed ({e}); retrying");
                revive.insert(k, now + Duration::from_secs(1));
            }
        }
    }
}

async fn simulate(args: SimulateArgs) -> Result<(), String> {
    lay_out(&args).await?;
    let sessions = args
        .sessions
        .unwrap_or((args.elections * args.candidates).min(MAX_DEFAULT_SESSIONS))
        .max(1);
    let mut sim = Sim {
        sessions,
        clients: (0..sessions).map(|_| None).collect(),
        generation: vec![0; sessions],
        owners: vec![BTreeMap::new(); args.elections],
        held: vec![None; args.elections],
        waiting: vec![Vec::new(); args.elections],
        rng: Rng::seeded(),
        args: args.clone(),
    };
    let started = Instant::now();
    for k in 0..sessions {
        sim.start_session(k)
            .await
            .map_err(|e| format!("cannot start simulated session {k}: {e}"))?;
    }
    if sim.args.style == SimStyle::Node {
        sim.claim().await;
    }
    eprintln!(
        "simulate: {} elections x {} candidates over {sessions} sessions under {} ready in {:.1?}",
        args.elections,
        args.candidates,
        args.path,
        started.elapsed()
    );
    // A duration past what the clock holds is no deadline at all; a rate
    // so small that its period overflows is one kill a day, one so large
    // that it rounds to nothing a kill a millisecond (a zero period would
    // panic the interval).
    let deadline = args
        .duration
        .and_then(|d| tokio::time::Instant::now().checked_add(d));
    let a_day = Duration::from_secs(3600 * 24);
    let mut kills = tokio::time::interval(if args.kill_rate > 0.0 {
        Duration::try_from_secs_f64(1.0 / args.kill_rate)
            .map_or(a_day, |p| p.clamp(Duration::from_millis(1), a_day))
    } else {
        a_day
    });
    kills.tick().await;
    let mut revive: HashMap<usize, tokio::time::Instant> = HashMap::new();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let (mut closed, mut abandoned, mut masterships) = (0u64, 0u64, 0u64);
    let mut report = tokio::time::interval(Duration::from_secs(10));
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            _ = &mut ctrl_c => break,
            _ = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } } => break,
            _ = kills.tick(), if args.kill_rate > 0.0 => {
                if let Some((k, detached, lost)) = sim.kill_random_master() {
                    if detached { abandoned += 1 } else { closed += 1 }
                    masterships += lost;
                    revive.insert(k, tokio::time::Instant::now() + Duration::from_millis(500));
                }
            }
            _ = tick.tick() => sim.step(&mut revive).await,
            _ = report.tick() => {
                eprintln!("simulate: so far {} sessions killed ({closed} closed, {abandoned} abandoned), {masterships} masterships lost (each one switch)", closed + abandoned);
            }
        }
    }
    eprintln!(
        "simulate: stopping; {} sessions killed ({closed} closed, {abandoned} abandoned), \
         {masterships} masterships lost: each becomes one switch once another candidate leads",
        closed + abandoned
    );
    Ok(())
}
