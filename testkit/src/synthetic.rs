//! A deterministic synthetic conversation archive in the JSONL message format
//! (`docs/format.md` §3.1), for benchmarks and load tests.
//!
//! The same [`SyntheticOptions`] always give the same bytes: the only source
//! of variation is a splitmix64 generator seeded from the options (no clock,
//! no hash-map iteration, no dependency). Generation streams: memory is
//! O(min(threads, messages)) however many messages are asked for.
//!
//! # What the archive holds
//!
//! - `threads` threads spread round-robin over `tenants` tenants; each
//!   thread gets at least one message (when there are at least as many
//!   messages as threads), sizes vary from thread to thread, and the total is
//!   exactly `messages`.
//! - Messages of all threads interleaved in a pseudo-random order; within a
//!   thread, positions are contiguous, timestamps increase (seconds to
//!   minutes inside a session, hours to days between sessions, in the
//!   thread's own UTC offset), and roles alternate user, assistant, user, …
//!   so every completed turn can seal.
//! - Text that reads like chat and gives every heuristic operator work:
//!   life events (new job, a move, an adopted dog), plans, decisions,
//!   cancellations of earlier plans, preferences, people named after a
//!   relation ("my sister Marta"), places, organisations, explicit dates
//!   ("on March 3, 2023") and relative ones ("last Tuesday", "two weeks
//!   ago", "next month"), questions and answers, short acknowledgements
//!   ("Okay."), assistant tool calls (`tool_calls` with canonical JSON
//!   arguments and results), and now and then a long paragraph pasted twice
//!   in one message. Word pools and sentence templates give a vocabulary of
//!   a few thousand distinct words.

use std::io::Write;

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyntheticOptions {
    /// Messages in the archive (exact).
    pub messages: u64,
    /// Threads (exact when `messages >= threads`; 0 is taken as 1).
    pub threads: u32,
    /// Seed of the generator.
    pub seed: u64,
    /// Tenants the threads are spread over (0 is taken as 1).
    pub tenants: u32,
}

impl Default for SyntheticOptions {
    fn default() -> Self {
        Self {
            messages: 1_000,
            threads: 10,
            seed: 0,
            tenants: 1,
        }
    }
}

/// What [`write_archive`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyntheticStats {
    /// Lines (messages) written.
    pub messages: u64,
    /// Threads that received at least one message.
    pub threads: u32,
    /// Bytes written.
    pub bytes: u64,
    /// Tool calls written.
    pub tool_calls: u64,
}

/// A tool call of a synthetic message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntheticToolCall {
    /// Tool name.
    pub name: &'static str,
    /// Arguments, canonical JSON text.
    pub arguments: String,
    /// Result, canonical JSON text.
    pub result: String,
}

/// One line of the archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntheticMessage {
    /// Tenant.
    pub tenant: String,
    /// Thread.
    pub thread: String,
    /// External id, unique in the thread.
    pub id: String,
    /// 0-based position in the thread (the order of the thread's lines).
    pub position: u64,
    /// `"user"` or `"assistant"`.
    pub role: &'static str,
    /// Display name.
    pub speaker: String,
    /// Text.
    pub content: String,
    /// Source time, UTC milliseconds.
    pub utc_ms: i64,
    /// The thread's UTC offset in minutes.
    pub offset_minutes: i16,
    /// Tool calls (assistant messages only).
    pub tool_calls: Vec<SyntheticToolCall>,
}

impl SyntheticMessage {
    /// The source time as RFC 3339 with the offset, to the second.
    pub fn ts(&self) -> String {
        let mut out = String::with_capacity(25);
        push_rfc3339(&mut out, self.utc_ms, self.offset_minutes);
        out
    }

    /// Appends the message as one JSONL line (with its newline) to `out`.
    pub fn write_json_line(&self, out: &mut String) {
        out.push_str("{\"tenant\":");
        push_json_string(out, &self.tenant);
        out.push_str(",\"thread\":");
        push_json_string(out, &self.thread);
        out.push_str(",\"id\":");
        push_json_string(out, &self.id);
        out.push_str(",\"role\":\"");
        out.push_str(self.role);
        out.push_str("\",\"speaker\":");
        push_json_string(out, &self.speaker);
        out.push_str(",\"content\":");
        push_json_string(out, &self.content);
        out.push_str(",\"ts\":\"");
        push_rfc3339(out, self.utc_ms, self.offset_minutes);
        out.push('"');
        if !self.tool_calls.is_empty() {
            out.push_str(",\"tool_calls\":[");
            for (i, call) in self.tool_calls.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str("{\"name\":");
                push_json_string(out, call.name);
                out.push_str(",\"arguments\":");
                out.push_str(&call.arguments);
                out.push_str(",\"result\":");
                out.push_str(&call.result);
                out.push('}');
            }
            out.push(']');
        }
        out.push_str("}\n");
    }
}

/// Writes the archive for `options` to `out`, one message per line.
pub fn write_archive(
    options: &SyntheticOptions,
    out: &mut dyn Write,
) -> std::io::Result<SyntheticStats> {
    let mut stats = SyntheticStats::default();
    let mut line = String::with_capacity(4096);
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut generator = messages(options);
    for m in generator.by_ref() {
        line.clear();
        m.write_json_line(&mut line);
        stats.messages += 1;
        stats.tool_calls += m.tool_calls.len() as u64;
        stats.bytes += line.len() as u64;
        buf.extend_from_slice(line.as_bytes());
        if buf.len() >= 1 << 16 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    out.flush()?;
    stats.threads = generator.threads_used();
    Ok(stats)
}

/// The archive's messages, streaming, in file order.
pub fn messages(options: &SyntheticOptions) -> Messages {
    Messages::new(options)
}

// ---------------------------------------------------------------------------
// Generator

/// splitmix64: tiny, fast, and good enough for test data.
#[derive(Clone, Debug)]
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Advances the generator by `n` draws (splitmix64 is a counter).
    fn skip(&mut self, n: u64) {
        self.0 = self
            .0
            .wrapping_add(0x9E37_79B9_7F4A_7C15_u64.wrapping_mul(n));
    }

    /// Uniform in `0..n` (0 when `n` is 0), by multiply-shift.
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi - lo).max(0) as u64 + 1;
        lo + ((u128::from(self.next_u64()) * u128::from(span)) >> 64) as i64
    }

    /// True with probability `p` percent.
    fn chance(&mut self, p: usize) -> bool {
        self.below(100) < p
    }

    fn pick<'a>(&mut self, pool: &[&'a str]) -> &'a str {
        let i = self.below(pool.len());
        pool.get(i).copied().unwrap_or("")
    }
}

/// What the user's last message was about, so the reply can follow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Topic {
    Event,
    Plan,
    Preference,
    Decision,
    Question,
    Work,
    Incident,
    Cancel,
    Ack,
    Paste,
    Chat,
    Weather,
    Schedule,
}

/// Everything a thread remembers: O(1) per thread.
#[derive(Clone, Debug)]
struct ThreadState {
    tenant: u32,
    index: u32,
    remaining: u64,
    position: u64,
    now_ms: i64,
    offset_minutes: i16,
    user: &'static str,
    assistant: &'static str,
    home: &'static str,
    relative: (&'static str, &'static str),
    friend: &'static str,
    employer: u16,
    hobby: &'static str,
    planned: Option<&'static str>,
    topic: Topic,
    subject: &'static str,
}

/// Draws of the generator that [`new_thread`] takes.
const DRAWS_PER_THREAD: u64 = 12;

/// A thread's initial state and name, from [`DRAWS_PER_THREAD`] draws.
fn new_thread(rng: &mut Rng, index: u32, tenants: u32, quota: u64) -> (ThreadState, String) {
    let slug = rng.pick(SLUGS);
    let relative = (rng.pick(RELATIONS), rng.pick(FIRST_NAMES));
    let state = ThreadState {
        tenant: index % tenants,
        index,
        remaining: quota,
        position: 0,
        now_ms: EPOCH_START_MS + rng.range(0, 900) * DAY_MS + rng.range(7 * 3600, 20 * 3600) * 1000,
        // default: never taken, `below` stays under the length.
        offset_minutes: OFFSETS.get(rng.below(OFFSETS.len())).copied().unwrap_or(0),
        user: rng.pick(FIRST_NAMES),
        assistant: rng.pick(ASSISTANTS),
        home: rng.pick(CITIES),
        relative,
        friend: rng.pick(FIRST_NAMES),
        employer: rng.below(ORG_PREFIXES.len() * ORG_SUFFIXES.len()) as u16,
        hobby: rng.pick(HOBBIES),
        planned: None,
        topic: Topic::Chat,
        subject: "",
    };
    (state, format!("{slug}-{index:05}"))
}

/// The streaming generator returned by [`messages`].
#[derive(Debug)]
pub struct Messages {
    rng: Rng,
    threads: Vec<ThreadState>,
    /// Threads with messages left, by index into `threads`.
    active: Vec<u32>,
    thread_names: Vec<String>,
    words: Pools,
}

/// Word pools, split once from the constant lists below.
#[derive(Debug)]
struct Pools {
    adjectives: Vec<&'static str>,
    nouns: Vec<&'static str>,
    verbs: Vec<&'static str>,
    adverbs: Vec<&'static str>,
    tasks: Vec<&'static str>,
    subjects: Vec<&'static str>,
}

impl Pools {
    fn new() -> Self {
        Self {
            adjectives: ADJECTIVES.split_whitespace().collect(),
            nouns: NOUNS.split_whitespace().collect(),
            verbs: VERBS.split_whitespace().collect(),
            adverbs: ADVERBS.split_whitespace().collect(),
            tasks: TASKS.split_whitespace().collect(),
            subjects: SUBJECTS.split(',').map(str::trim).collect(),
        }
    }
}

const DAY_MS: i64 = 86_400_000;
/// 2022-01-01T00:00:00Z.
const EPOCH_START_MS: i64 = 1_640_995_200_000;

impl Messages {
    fn new(options: &SyntheticOptions) -> Self {
        let threads = options.threads.max(1);
        let tenants = options.tenants.max(1);
        let mut rng = Rng(options.seed ^ 0x5EED_5EED_0000_0001);
        // Every thread gets one message, the rest is shared by random
        // weights (1..=8), the rounding remainder one by one.
        // Only the first `count` threads get messages: the others are never
        // materialized (memory and time are O(min(threads, messages))), but
        // the generator skips the draws they would have taken, so the bytes
        // are those of a run that built every thread.
        let count = u64::from(threads).min(options.messages);
        let used = u32::try_from(count).unwrap_or(threads);
        let unused = u64::from(threads - used);
        let weights: Vec<u64> = (0..used).map(|_| 1 + rng.below(8) as u64).collect();
        rng.skip(unused);
        let total_weight: u64 = weights.iter().sum();
        let rest = options.messages - count;
        let mut quotas: Vec<u64> = weights
            .iter()
            .map(|w| {
                1 + (u128::from(rest) * u128::from(*w) / u128::from(total_weight.max(1))) as u64
            })
            .collect();
        let mut left = options.messages - quotas.iter().sum::<u64>();
        let mut i = 0usize;
        while left > 0 && count > 0 {
            if let Some(q) = quotas.get_mut(i % count as usize) {
                *q += 1;
                left -= 1;
            }
            i += 1;
        }
        let mut states = Vec::with_capacity(used as usize);
        let mut names = Vec::with_capacity(used as usize);
        for (index, quota) in (0..used).zip(quotas) {
            let (state, name) = new_thread(&mut rng, index, tenants, quota);
            names.push(name);
            states.push(state);
        }
        rng.skip(unused * DRAWS_PER_THREAD);
        let active = (0..used)
            .filter(|i| states.get(*i as usize).is_some_and(|s| s.remaining > 0))
            .collect();
        Self {
            rng,
            threads: states,
            active,
            thread_names: names,
            words: Pools::new(),
        }
    }

    /// Threads that have (or will have) at least one message.
    fn threads_used(&self) -> u32 {
        self.threads
            .iter()
            .filter(|t| t.position > 0 || t.remaining > 0)
            .count() as u32
    }
}

impl Iterator for Messages {
    type Item = SyntheticMessage;

    fn next(&mut self) -> Option<SyntheticMessage> {
        if self.active.is_empty() {
            return None;
        }
        let slot = self.rng.below(self.active.len());
        let index = *self.active.get(slot)?;
        let mut state = self.threads.get(index as usize)?.clone();
        let message = self.step(&mut state);
        state.remaining -= 1;
        if state.remaining == 0 {
            self.active.swap_remove(slot);
        }
        if let Some(s) = self.threads.get_mut(index as usize) {
            *s = state;
        }
        Some(message)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left: u64 = self.threads.iter().map(|t| t.remaining).sum();
        let left = usize::try_from(left).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

impl Messages {
    /// The next message of one thread, advancing its state.
    fn step(&mut self, t: &mut ThreadState) -> SyntheticMessage {
        let user_turn = t.position.is_multiple_of(2);
        // Time: a reply comes seconds to minutes after its question; the
        // next question minutes later, or hours to days later when a new
        // session starts.
        if t.position > 0 {
            let gap_s = if !user_turn {
                self.rng.range(4, 180)
            } else if self.rng.chance(70) {
                self.rng.range(30, 20 * 60)
            } else if self.rng.chance(60) {
                self.rng.range(2 * 3600, 20 * 3600)
            } else {
                self.rng.range(86_400, 12 * 86_400)
            };
            t.now_ms += gap_s * 1000;
        }
        let mut tool_calls = Vec::new();
        let (role, speaker, content) = if user_turn {
            ("user", t.user, self.user_text(t))
        } else {
            let text = self.assistant_text(t, &mut tool_calls);
            ("assistant", t.assistant, text)
        };
        let message = SyntheticMessage {
            tenant: format!("tenant-{:02}", t.tenant),
            // default: never taken, one name is made per thread.
            thread: self
                .thread_names
                .get(t.index as usize)
                .cloned()
                .unwrap_or_default(),
            id: format!("m{:06}", t.position + 1),
            position: t.position,
            role,
            speaker: speaker.to_owned(),
            content,
            utc_ms: t.now_ms,
            offset_minutes: t.offset_minutes,
            tool_calls,
        };
        t.position += 1;
        message
    }

    fn employer(&self, t: &ThreadState) -> String {
        let n = t.employer as usize;
        let prefix = ORG_PREFIXES
            .get(n % ORG_PREFIXES.len())
            .copied()
            .unwrap_or("");
        let suffix = ORG_SUFFIXES
            .get(n / ORG_PREFIXES.len() % ORG_SUFFIXES.len())
            .copied()
            .unwrap_or("");
        format!("{prefix} {suffix}")
    }

    fn org(&mut self) -> String {
        let prefix = self.rng.pick(ORG_PREFIXES);
        let suffix = self.rng.pick(ORG_SUFFIXES);
        format!("{prefix} {suffix}")
    }

    /// The local calendar date `days` days from the thread's current time.
    fn local_date(t: &ThreadState, days: i64) -> (i64, u32, u32) {
        let local = t.now_ms + i64::from(t.offset_minutes) * 60_000;
        civil_from_days(local.div_euclid(DAY_MS) + days)
    }

    /// An explicit past date, written one of several ways.
    fn past_date(&mut self, t: &ThreadState) -> String {
        let back = self.rng.range(2, 120);
        let (y, m, d) = Self::local_date(t, -back);
        let month = month_name(m);
        match self.rng.below(5) {
            0 => format!("on {month} {d}, {y}"),
            1 => format!("on {d} {month} {y}"),
            2 => format!("on {month} {d}{}", ordinal_suffix(d)),
            3 => format!("on {y}-{m:02}-{d:02}"),
            _ => format!("on the {d}{} of {month} {y}", ordinal_suffix(d)),
        }
    }

    fn past_time(&mut self, t: &ThreadState) -> String {
        if self.rng.chance(30) {
            return self.past_date(t);
        }
        let weekday = self.rng.pick(WEEKDAYS);
        match self.rng.below(14) {
            0 => "yesterday".to_owned(),
            1 => format!("last {weekday}"),
            2 => format!("{} weeks ago", self.rng.pick(&["two", "three", "four"])),
            3 => "a few days ago".to_owned(),
            4 => "last month".to_owned(),
            5 => format!("{} months ago", self.rng.pick(&["two", "three", "six"])),
            6 => "last weekend".to_owned(),
            7 => "the other day".to_owned(),
            8 => "earlier this month".to_owned(),
            9 => "last year".to_owned(),
            10 => "yesterday morning".to_owned(),
            11 => format!("on {weekday}"),
            12 => "two days ago".to_owned(),
            _ => "last week".to_owned(),
        }
    }

    fn future_time(&mut self, t: &ThreadState) -> String {
        let weekday = self.rng.pick(WEEKDAYS);
        match self.rng.below(12) {
            0 => "tomorrow".to_owned(),
            1 => "next week".to_owned(),
            2 => "next month".to_owned(),
            3 => format!("next {weekday}"),
            4 => "this weekend".to_owned(),
            5 => "in two weeks".to_owned(),
            6 => "in a couple of days".to_owned(),
            7 => "next year".to_owned(),
            8 => format!("this coming {weekday}"),
            _ => {
                let ahead = self.rng.range(1, 6);
                let (_, m, _) = Self::local_date(t, ahead * 31);
                format!("in {}", month_name(m))
            }
        }
    }

    /// A sentence of ordinary detail, for vocabulary.
    fn detail(&mut self) -> String {
        let w = &self.words;
        let a1 = pick_from(&mut self.rng, &w.adjectives);
        let n1 = pick_from(&mut self.rng, &w.nouns);
        let n2 = pick_from(&mut self.rng, &w.nouns);
        let a2 = pick_from(&mut self.rng, &w.adjectives);
        let v = pick_from(&mut self.rng, &w.verbs);
        let n3 = pick_from(&mut self.rng, &w.nouns);
        let adv = pick_from(&mut self.rng, &w.adverbs);
        let (x1, x2) = (article(a1), article(a2));
        let k1 = pick_from(&mut self.rng, &w.tasks);
        let k2 = pick_from(&mut self.rng, &w.tasks);
        match self.rng.below(14) {
            10 => format!("The {k1} and the {k2} took most of the afternoon."),
            11 => format!("Between the {k1} and the {a1} {n1}, it was a {adv} long week."),
            12 => format!("Still behind on the {k1}, and the {k2} is {a2}."),
            13 => format!("At least the {k1} went {adv} well."),
            0 => format!("The {a1} {n1} near the {n2} was {a2}."),
            1 => format!("Honestly the {n1} felt {a1}, but the {n2} {adv} {v} the {n3}."),
            2 => format!("There was {x1} {a1} {n1} and {x2} {a2} {n2} everywhere."),
            3 => format!("Somebody {v} the {n1} so now the {n2} looks {a1}."),
            4 => format!("It reminded me of the {a1} {n1} we {v} with the {n2}."),
            5 => format!("The {n1} was {a1} and the {n2} was even more {a2}."),
            6 => format!("Apparently {x1} {a1} {n1} {adv} {v} {x2} {a2} {n2}."),
            7 => format!("My neighbor {adv} {v} the {n1} next to the {a2} {n2}."),
            8 => format!("The {n1} by the {n2} is {a1} now, {adv} so."),
            _ => format!("We talked about the {n1}, the {n2} and {x1} {a1} {n3}."),
        }
    }

    fn user_text(&mut self, t: &mut ThreadState) -> String {
        let mut parts: Vec<String> = Vec::with_capacity(4);
        t.subject = "";
        if self.rng.chance(15) {
            let greeting = self.rng.pick(GREETINGS);
            parts.push(greeting.replace("{a}", t.assistant));
        }
        let roll = self.rng.below(100);
        let topic = match roll {
            0..=11 => Topic::Event,
            12..=21 => Topic::Plan,
            22..=30 => Topic::Preference,
            31..=36 => Topic::Decision,
            37..=48 => Topic::Question,
            49..=55 => Topic::Work,
            56..=60 => Topic::Incident,
            61..=63 if t.planned.is_some() => Topic::Cancel,
            61..=69 => Topic::Ack,
            70..=72 => Topic::Paste,
            73..=84 => Topic::Chat,
            85..=91 => Topic::Weather,
            _ => Topic::Schedule,
        };
        t.topic = topic;
        let main = match topic {
            Topic::Event => self.life_event(t),
            Topic::Plan => self.plan(t),
            Topic::Preference => self.preference(t),
            Topic::Decision => self.decision(t),
            Topic::Question => self.question(t),
            Topic::Work => self.work(t),
            Topic::Incident => self.incident(t),
            Topic::Cancel => {
                let city = t.planned.take().unwrap_or(t.home);
                t.subject = city;
                let when = self.past_time(t);
                format!(
                    "{} We cancelled the trip to {city} {when}.",
                    self.rng
                        .pick(&["Bad news.", "Change of plans.", "Ugh.", "So,"]),
                )
            }
            Topic::Ack => return self.rng.pick(ACKS).to_owned(),
            Topic::Paste => self.paste(t),
            Topic::Chat => {
                let opener =
                    self.rng
                        .pick(&["Guess what?", "Random thought.", "Funny story.", "Anyway."]);
                let d = self.detail();
                format!("{opener} {d}")
            }
            Topic::Weather => {
                let city = if self.rng.chance(50) {
                    t.planned.unwrap_or(t.home)
                } else {
                    self.rng.pick(CITIES)
                };
                t.subject = city;
                let when = self.future_time(t);
                format!("What's the weather going to be like in {city} {when}?")
            }
            Topic::Schedule => {
                let what = self.rng.pick(APPOINTMENTS);
                t.subject = what;
                let when = self.future_time(t);
                format!("Can you put {what} on my calendar for {when}?")
            }
        };
        parts.push(main);
        if self.rng.chance(45) {
            parts.push(self.detail());
            if self.rng.chance(30) {
                parts.push(self.detail());
            }
        }
        if self.rng.chance(10) {
            parts.push(self.rng.pick(FOLLOW_UPS).to_owned());
        }
        parts.join(" ")
    }

    fn life_event(&mut self, t: &mut ThreadState) -> String {
        let when = self.past_time(t);
        let (rel, name) = t.relative;
        match self.rng.below(12) {
            0 => {
                let org = self.org();
                t.employer = self.rng.below(ORG_PREFIXES.len() * ORG_SUFFIXES.len()) as u16;
                format!("I started a new job at {org} {when}!")
            }
            1 => {
                let city = self.rng.pick(CITIES);
                t.home = city;
                t.subject = city;
                format!("We moved to {city} {when}, still unpacking boxes.")
            }
            2 => {
                let pet = self.rng.pick(PET_NAMES);
                let kind = self
                    .rng
                    .pick(&["dog", "puppy", "cat", "kitten", "rescue greyhound"]);
                format!("I adopted a {kind} named {pet} {when}.")
            }
            3 => format!("My {rel} {name} got married {when}, it was beautiful."),
            4 => {
                let city = self.rng.pick(CITIES);
                t.subject = city;
                format!("I visited {city} with my {rel} {name} {when}.")
            }
            5 => format!("I finished my first half marathon {when}."),
            6 => {
                let school = self.rng.pick(&["University", "College", "Institute"]);
                let prefix = self.rng.pick(ORG_PREFIXES);
                format!("My {rel} {name} graduated from {prefix} {school} {when}.")
            }
            7 => format!("I went to a {} workshop {when} and loved it.", t.hobby),
            8 => {
                let friend = t.friend;
                format!("I met my old friend {friend} for dinner {when}.")
            }
            9 => {
                let thing = self.rng.pick(&[
                    "a used car",
                    "a new bike",
                    "an electric piano",
                    "a tiny apartment",
                    "a tent",
                ]);
                format!("I bought {thing} {when}.")
            }
            10 => format!("I passed my driving test {when}, finally."),
            _ => {
                let org = self.employer(t);
                format!("I got promoted at {org} {when}.")
            }
        }
    }

    fn plan(&mut self, t: &mut ThreadState) -> String {
        let when = self.future_time(t);
        let city = self.rng.pick(CITIES);
        let (rel, name) = t.relative;
        match self.rng.below(8) {
            0 => {
                t.planned = Some(city);
                t.subject = city;
                format!("I'm planning to visit {city} {when}.")
            }
            1 => {
                t.planned = Some(city);
                t.subject = city;
                format!("My {rel} {name} and I are going to {city} {when}.")
            }
            2 => format!("I'll start a {} class {when}.", t.hobby),
            3 => {
                t.subject = city;
                format!("We're thinking about moving to {city} {when}.")
            }
            4 => format!("I want to run a 10k {when}, so I need a training plan."),
            5 => {
                let org = self.org();
                format!("I have an interview at {org} {when}.")
            }
            6 => {
                t.planned = Some(city);
                t.subject = city;
                let friend = t.friend;
                format!("I'm going to fly to {city} {when} to see my friend {friend}.")
            }
            _ => format!("We're hosting a dinner for my {rel} {name} {when}."),
        }
    }

    fn preference(&mut self, t: &mut ThreadState) -> String {
        let a = self.rng.pick(HOBBIES);
        let b = self.rng.pick(FOODS);
        t.subject = a;
        match self.rng.below(8) {
            0 => format!("I love {a}, it clears my head."),
            1 => format!("I really enjoy {a} and {}.", t.hobby),
            2 => format!("I prefer {b} over anything fried."),
            3 => format!("I hate {}.", self.rng.pick(DISLIKES)),
            4 => format!("My favorite food is {b}."),
            5 => format!("I'm really into {a} these days."),
            6 => format!("I don't like {} at all.", self.rng.pick(DISLIKES)),
            _ => format!(
                "I'm allergic to {}, so please keep that in mind.",
                self.rng.pick(ALLERGENS)
            ),
        }
    }

    fn decision(&mut self, t: &mut ThreadState) -> String {
        let x = self.rng.pick(TECH);
        let y = self.rng.pick(TECH);
        let c1 = self.rng.pick(CITIES);
        let c2 = self.rng.pick(CITIES);
        t.subject = c1;
        match self.rng.below(5) {
            0 => format!("I decided to switch from {x} to {y} for the side project."),
            1 => format!("We chose {c1} over {c2} for the summer trip."),
            2 => format!("I decided to take the offer from {}.", self.org()),
            3 => "We decided to sell the car and bike to work instead.".to_owned(),
            _ => format!(
                "I decided to quit {} and focus on {}.",
                self.rng.pick(HOBBIES),
                t.hobby
            ),
        }
    }

    fn question(&mut self, t: &mut ThreadState) -> String {
        let subject = self.pick_subject();
        t.subject = subject;
        match self.rng.below(8) {
            0 => format!("What's a good way to learn {subject}?"),
            1 => format!("Can you explain {subject} in simple terms?"),
            2 => format!("Do you know any good restaurants in {}?", t.home),
            3 => format!("How long does it usually take to get good at {subject}?"),
            4 => format!("When did I say my {} was moving?", t.relative.0),
            5 => format!("What did I tell you about {}?", t.friend),
            6 => format!("Any tips for {subject} on a budget?"),
            _ => format!("Is {subject} worth it for a beginner?"),
        }
    }

    fn pick_subject(&mut self) -> &'static str {
        let i = self.rng.below(self.words.subjects.len());
        self.words.subjects.get(i).copied().unwrap_or("cooking")
    }

    fn work(&mut self, t: &mut ThreadState) -> String {
        let org = self.employer(t);
        let occupation = self.rng.pick(OCCUPATIONS);
        let project = self.rng.pick(PROJECTS);
        let tech = self.rng.pick(TECH);
        match self.rng.below(6) {
            0 => format!("I work as {} {occupation} at {org}.", article(occupation)),
            1 => format!("I'm currently working on Project {project} at {org}."),
            2 => format!(
                "We're migrating the {project} service from {tech} to {}.",
                self.rng.pick(TECH)
            ),
            3 => format!(
                "I'm {} {occupation}, mostly night shifts lately.",
                article(occupation)
            ),
            4 => format!("My boss {} wants the {project} launch moved up.", t.friend),
            _ => format!("We shipped the {project} release {}.", self.past_time(t)),
        }
    }

    fn incident(&mut self, t: &mut ThreadState) -> String {
        let when = self.past_time(t);
        match self.rng.below(5) {
            0 => format!("I broke my wrist {when} while {}.", self.rng.pick(HOBBIES)),
            1 => format!("Our database had an outage {when} and I was up all night."),
            2 => format!("I lost my wallet {when} on the train."),
            3 => format!(
                "My {} was in a minor accident {when} but is fine now.",
                t.relative.0
            ),
            _ => format!("I ended up in the hospital {when} with a bad allergic reaction."),
        }
    }

    fn paste(&mut self, t: &mut ThreadState) -> String {
        let para = match self.rng.below(3) {
            0 => {
                let tech = self.rng.pick(TECH);
                let code = self.rng.range(100, 999);
                format!(
                    "ERROR {code}: connection to {tech} refused while running migration step {} (retrying in {} seconds, attempt {} of 5)",
                    self.rng.range(1, 40),
                    self.rng.range(2, 60),
                    self.rng.range(1, 5)
                )
            }
            1 => {
                let city = t.planned.unwrap_or(t.home);
                let (y, m, d) = Self::local_date(t, self.rng.range(5, 60));
                format!(
                    "Itinerary: depart {} on {} {d}, {y}, arrive {city} in the evening, check in at the {} {} Hotel, dinner reservation for {} at 8 pm.",
                    t.home,
                    month_name(m),
                    self.rng.pick(ORG_PREFIXES),
                    self.rng.pick(&["Grand", "Harbor", "Garden", "Station"]),
                    self.rng.range(2, 6)
                )
            }
            _ => format!(
                "Meeting notes: the {} team agreed to freeze the {} scope, {} owns the rollout plan and we review the numbers again next week.",
                self.rng.pick(PROJECTS),
                self.rng.pick(PROJECTS),
                t.friend
            ),
        };
        let intro = self.rng.pick(&[
            "Pasting this again because I'm not sure it went through:",
            "Here it is again:",
            "Same thing as before, twice because my clipboard is weird:",
        ]);
        format!("{intro}\n\n{para}\n\n{para}")
    }

    fn assistant_text(
        &mut self,
        t: &mut ThreadState,
        calls: &mut Vec<SyntheticToolCall>,
    ) -> String {
        let mut parts: Vec<String> = Vec::with_capacity(4);
        if self.rng.chance(8) {
            parts.push("Okay.\n".to_owned());
        }
        let subject = t.subject;
        let user = t.user;
        let body = match t.topic {
            Topic::Event => {
                let r = self.rng.pick(REACTIONS);
                let q = self.rng.pick(&[
                    "How are you feeling about it?",
                    "What was the best part?",
                    "Did anything surprise you?",
                    "How did everyone react?",
                ]);
                format!("{r} {q}")
            }
            Topic::Plan => {
                let r = self.rng.pick(REACTIONS);
                if subject.is_empty() {
                    format!("{r} Do you want me to set a reminder a few days before?")
                } else {
                    format!("{r} {subject} is lovely that time of year. Do you already have a place to stay?")
                }
            }
            Topic::Preference => format!(
                "Noted, {user}. I'll keep that in mind when I suggest {}.",
                self.rng.pick(&["restaurants", "weekend plans", "recipes", "gifts", "trips"])
            ),
            Topic::Decision => format!(
                "That sounds like a solid decision. {}",
                self.rng.pick(&[
                    "What tipped the balance?",
                    "Do you want a checklist for the next steps?",
                    "I can help you plan the transition.",
                ])
            ),
            Topic::Question => self.answer(subject),
            Topic::Work => format!(
                "Thanks for the context. {}",
                self.rng.pick(&[
                    "How is the team handling the workload?",
                    "Is the deadline realistic?",
                    "Let me know if you want help drafting the update.",
                ])
            ),
            Topic::Incident => format!(
                "I'm sorry to hear that. {}",
                self.rng.pick(&[
                    "I hope you're recovering well.",
                    "Is there anything I can do to help?",
                    "Please take care of yourself.",
                ])
            ),
            Topic::Cancel => format!(
                "That's a shame about {subject}. I've removed the trip from your plans; do you want to reschedule it?"
            ),
            Topic::Ack => self.rng.pick(&[
                "Great, let me know if anything else comes up.",
                "Anytime!",
                "Glad that helps.",
                "Sure thing.",
            ])
            .to_owned(),
            Topic::Paste => "It looks like the same paragraph twice. I read it; the relevant part is the first line, and the rest matches what you sent earlier.".to_owned(),
            Topic::Chat => {
                let d = self.detail();
                format!("Ha, that's fun. {d}")
            }
            Topic::Weather => {
                let (y, m, d) = Self::local_date(t, self.rng.range(0, 7));
                let high = self.rng.range(-3, 36);
                let low = high - self.rng.range(3, 12);
                let sky = self.rng.pick(&["sunny", "cloudy", "light rain", "windy", "snow showers", "clear"]);
                calls.push(SyntheticToolCall {
                    name: "weather",
                    arguments: format!(
                        "{{\"city\":{},\"date\":\"{y}-{m:02}-{d:02}\"}}",
                        json_string(subject)
                    ),
                    result: format!(
                        "{{\"high_c\":{high},\"low_c\":{low},\"summary\":\"{sky}\"}}"
                    ),
                });
                format!("It looks {sky} in {subject}, with a high of {high}°C and a low of {low}°C.")
            }
            Topic::Schedule => {
                let (y, m, d) = Self::local_date(t, self.rng.range(1, 30));
                let hour = self.rng.range(8, 18);
                let event_id = self.rng.next_u64() % 1_000_000;
                calls.push(SyntheticToolCall {
                    name: "calendar_create_event",
                    arguments: format!(
                        "{{\"start\":\"{y}-{m:02}-{d:02}T{hour:02}:00:00\",\"title\":{}}}",
                        json_string(subject)
                    ),
                    result: format!("{{\"id\":\"evt-{event_id:06}\",\"status\":\"confirmed\"}}"),
                });
                let what = subject
                    .strip_prefix("my ")
                    .map_or_else(|| subject.to_owned(), |rest| format!("your {rest}"));
                format!(
                    "Done, {what} is on your calendar for {} {d}, {y} at {hour}:00.",
                    month_name(m)
                )
            }
        };
        parts.push(body);
        if matches!(t.topic, Topic::Question) && self.rng.chance(25) {
            calls.push(SyntheticToolCall {
                name: "web_search",
                arguments: format!("{{\"query\":{}}}", json_string(subject)),
                result: format!(
                    "{{\"results\":[{{\"title\":{},\"url\":\"https://example.org/{}\"}}]}}",
                    json_string(&format!("A beginner's guide to {subject}")),
                    self.rng.next_u64() % 100_000
                ),
            });
        }
        parts.concat()
    }

    fn answer(&mut self, subject: &'static str) -> String {
        let a1 = pick_from(&mut self.rng, &self.words.adjectives);
        let n1 = pick_from(&mut self.rng, &self.words.nouns);
        let n2 = pick_from(&mut self.rng, &self.words.nouns);
        match self.rng.below(5) {
            0 => format!(
                "A good way to start with {subject} is to pick one {a1} {n1} and practise a little every day. Most people see progress within a few weeks."
            ),
            1 => format!(
                "In short, {subject} is mostly about the basics: the {n1}, the {n2}, and patience. Start small and build up."
            ),
            2 => format!(
                "It depends on your goals. For {subject}, a {a1} routine of two or three sessions a week works well, and a local group helps a lot."
            ),
            3 => format!(
                "Yes, {subject} is beginner friendly. Borrow a {n1} before buying one, and look for a {a1} {n2} near you."
            ),
            _ => format!(
                "I'd say {subject} is worth trying. The first month is the hardest; after that the {n1} becomes second nature."
            ),
        }
    }
}

fn pick_from(rng: &mut Rng, pool: &[&'static str]) -> &'static str {
    rng.pick(pool)
}

/// "a" or "an" before `word`.
fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

// ---------------------------------------------------------------------------
// Text helpers

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_json_string(&mut out, s);
    out
}

/// Appends `s` as a JSON string literal.
fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends `utc_ms` as RFC 3339 in the given offset, to the second.
fn push_rfc3339(out: &mut String, utc_ms: i64, offset_minutes: i16) {
    use std::fmt::Write as _;
    let local_s = (utc_ms + i64::from(offset_minutes) * 60_000).div_euclid(1000);
    let (y, m, d) = civil_from_days(local_s.div_euclid(86_400));
    let secs = local_s.rem_euclid(86_400);
    let (hh, mm, ss) = (secs / 3600, secs / 60 % 60, secs % 60);
    let _ = write!(out, "{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}");
    if offset_minutes == 0 {
        out.push('Z');
    } else {
        let sign = if offset_minutes < 0 { '-' } else { '+' };
        let abs = offset_minutes.unsigned_abs();
        let _ = write!(out, "{sign}{:02}:{:02}", abs / 60, abs % 60);
    }
}

/// (year, month 1–12, day 1–31) of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn month_name(m: u32) -> &'static str {
    MONTH_NAMES
        .get((m as usize).saturating_sub(1))
        .copied()
        .unwrap_or("January")
}

fn ordinal_suffix(d: u32) -> &'static str {
    match (d % 10, d % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

// ---------------------------------------------------------------------------
// Pools

const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

const WEEKDAYS: &[&str] = &[
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

const OFFSETS: &[i16] = &[0, 60, 120, -300, -240, -480, 330, 540, 600, -180];

const SLUGS: &[&str] = &[
    "travel", "work", "health", "cooking", "moving", "pets", "study", "family", "projects",
    "fitness", "money", "garden", "music", "reading",
];

const FIRST_NAMES: &[&str] = &[
    "Ana", "Marta", "Joao", "Caroline", "Melanie", "Tomas", "Priya", "Kenji", "Amara", "Lucas",
    "Sofia", "Mateo", "Elena", "Omar", "Fatima", "Noah", "Chloe", "Liam", "Aisha", "Diego",
    "Hannah", "Yusuf", "Ingrid", "Pavel", "Mei", "Raj", "Olivia", "Ethan", "Zoë", "José", "Nadia",
    "Felix", "Greta", "Hugo", "Isabel", "Jonas", "Keiko", "Leon", "Maya", "Nico", "Oskar", "Paula",
    "Quinn", "Rosa", "Samir", "Tara", "Umar", "Vera", "Wanda", "Xavier", "Yara", "Zain", "Bruno",
    "Clara", "Dmitri", "Emma", "Farah", "Gabriel", "Helena", "Ivan",
];

const ASSISTANTS: &[&str] = &["Assistant", "Assistant", "Assistant", "Sage", "Atlas"];

const RELATIONS: &[&str] = &[
    "sister",
    "brother",
    "mom",
    "dad",
    "daughter",
    "son",
    "wife",
    "husband",
    "partner",
    "cousin",
    "aunt",
    "uncle",
    "grandma",
    "colleague",
    "friend",
    "mentor",
    "boss",
    "neighbor",
];

const CITIES: &[&str] = &[
    "Lisbon",
    "Porto",
    "Madrid",
    "Barcelona",
    "Paris",
    "Lyon",
    "Berlin",
    "Munich",
    "Vienna",
    "Prague",
    "Krakow",
    "Warsaw",
    "Budapest",
    "Rome",
    "Florence",
    "Naples",
    "Athens",
    "Istanbul",
    "Cairo",
    "Nairobi",
    "Lagos",
    "Accra",
    "Marrakesh",
    "Dubai",
    "Mumbai",
    "Delhi",
    "Bangalore",
    "Kathmandu",
    "Bangkok",
    "Hanoi",
    "Singapore",
    "Jakarta",
    "Manila",
    "Seoul",
    "Tokyo",
    "Kyoto",
    "Osaka",
    "Sapporo",
    "Beijing",
    "Shanghai",
    "Sydney",
    "Melbourne",
    "Auckland",
    "Vancouver",
    "Toronto",
    "Montreal",
    "Chicago",
    "Boston",
    "Denver",
    "Seattle",
    "Austin",
    "Miami",
    "Havana",
    "Bogota",
    "Lima",
    "Santiago",
    "Montevideo",
    "Reykjavik",
    "Oslo",
    "Stockholm",
    "Helsinki",
    "Copenhagen",
    "Amsterdam",
    "Brussels",
    "Dublin",
    "Edinburgh",
    "Glasgow",
];

const ORG_PREFIXES: &[&str] = &[
    "Northwind",
    "Bluebird",
    "Riverside",
    "Hillcrest",
    "Acme",
    "Brightpath",
    "Cedar",
    "Evergreen",
    "Granite",
    "Harborview",
    "Ironwood",
    "Juniper",
    "Keystone",
    "Lakeshore",
    "Meridian",
    "Oakridge",
    "Pinecrest",
    "Quarry",
    "Redwood",
    "Silverline",
    "Summit",
    "Tidewater",
    "Vanguard",
    "Westfield",
    "Willow",
    "Zenith",
    "Copperfield",
    "Foxglove",
];

const ORG_SUFFIXES: &[&str] = &[
    "Labs",
    "Bank",
    "Hospital",
    "University",
    "Corp",
    "Group",
    "Institute",
    "Foundation",
    "College",
    "Inc",
];

const OCCUPATIONS: &[&str] = &[
    "teacher",
    "nurse",
    "software engineer",
    "data analyst",
    "product manager",
    "designer",
    "accountant",
    "pharmacist",
    "lawyer",
    "chef",
    "architect",
    "electrician",
    "researcher",
    "librarian",
];

const PROJECTS: &[&str] = &[
    "Atlas", "Beacon", "Comet", "Delta", "Ember", "Falcon", "Glacier", "Horizon", "Indigo",
    "Jasper", "Kestrel", "Lumen", "Mosaic", "Nimbus", "Orbit", "Prism", "Quartz", "Raven",
];

const TECH: &[&str] = &[
    "Postgres",
    "SQLite",
    "MySQL",
    "Redis",
    "Kafka",
    "Kubernetes",
    "Docker",
    "Terraform",
    "Python",
    "Rust",
    "Go",
    "TypeScript",
    "React",
    "Django",
    "Rails",
    "Spark",
    "Airflow",
    "Elasticsearch",
    "MongoDB",
    "Nginx",
];

const HOBBIES: &[&str] = &[
    "hiking",
    "pottery",
    "rock climbing",
    "sourdough baking",
    "painting",
    "birdwatching",
    "trail running",
    "swimming",
    "chess",
    "knitting",
    "salsa dancing",
    "photography",
    "gardening",
    "surfing",
    "woodworking",
    "yoga",
    "cycling",
    "camping",
    "board games",
    "journaling",
    "calligraphy",
    "skiing",
    "kayaking",
    "bouldering",
    "playing guitar",
    "playing piano",
    "origami",
    "fishing",
    "tennis",
    "volunteering",
];

const FOODS: &[&str] = &[
    "ramen",
    "tacos",
    "pho",
    "sushi",
    "shakshuka",
    "dumplings",
    "paella",
    "falafel",
    "lasagna",
    "curry",
    "bibimbap",
    "ceviche",
    "pierogi",
    "risotto",
    "empanadas",
    "green tea",
    "dark chocolate",
    "pastel de nata",
    "lentil soup",
    "grilled sardines",
];

const DISLIKES: &[&str] = &[
    "crowded trains",
    "early meetings",
    "cilantro",
    "loud restaurants",
    "long layovers",
    "cold coffee",
    "traffic jams",
    "horror movies",
    "doing taxes",
];

const ALLERGENS: &[&str] = &[
    "peanuts",
    "shellfish",
    "penicillin",
    "cats",
    "pollen",
    "gluten",
];

const PET_NAMES: &[&str] = &[
    "Biscuit", "Pepper", "Miso", "Luna", "Rocket", "Mango", "Pickles", "Nova", "Bear", "Olive",
    "Ziggy", "Toast",
];

const APPOINTMENTS: &[&str] = &[
    "my dentist appointment",
    "the team offsite",
    "a call with the landlord",
    "my physiotherapy session",
    "the parent teacher meeting",
    "a haircut",
    "the car service",
    "dinner with the neighbors",
    "my yoga class",
    "the visa interview",
];

const GREETINGS: &[&str] = &[
    "Hey {a}!",
    "Hi!",
    "Morning!",
    "Hello again.",
    "Hey, quick one.",
    "Good evening!",
];

const ACKS: &[&str] = &[
    "Okay.",
    "Thanks!",
    "Got it.",
    "Sure.",
    "Thank you.",
    "Okay, thanks.",
    "Yes.",
    "Ok",
];

const FOLLOW_UPS: &[&str] = &[
    "What do you think?",
    "Does that make sense?",
    "Any thoughts?",
    "Should I be worried?",
    "Let me know.",
];

const REACTIONS: &[&str] = &[
    "That's wonderful news!",
    "Wow, congratulations!",
    "That sounds exciting.",
    "Oh nice, good for you.",
    "How lovely!",
    "That's a big step.",
];

/// Subjects of questions, comma-separated.
const SUBJECTS: &str = "woodworking, bread baking, Spanish, Japanese, the guitar, watercolor painting, \
    marathon training, personal finance, index funds, composting, beekeeping, home brewing, \
    sailing, rock climbing, meditation, public speaking, negotiating a raise, sketching, \
    Rust, Python, SQL, machine learning, statistics, photography, film cameras, sewing, \
    urban gardening, fermentation, jazz piano, sourdough, chess openings, cold water swimming, \
    bird photography, van life, minimalism, touch typing, speed reading, calisthenics, \
    interval training, vegetarian cooking, knife skills, coffee roasting, wine tasting, \
    pottery glazing, bookbinding, stargazing, astronomy, geology, kite surfing, \
    mountain biking, ballroom dancing, improv comedy, songwriting, podcasting";

/// Adverbs of detail sentences.
const ADVERBS: &str = "apparently barely briefly calmly carefully casually cheerfully clumsily \
    eagerly easily finally gently gladly gracefully happily honestly hurriedly lazily loudly \
    luckily merrily mysteriously nearly neatly nervously oddly patiently politely proudly \
    quickly quietly rapidly rarely reluctantly roughly rudely sadly secretly seriously \
    sharply shyly silently slowly smoothly softly strangely suddenly swiftly tenderly \
    thoughtfully tightly truly unexpectedly wildly";

/// Errands, chores and work things, for detail sentences.
const TASKS: &str = "paperwork laundry groceries dishes vacuuming repotting budgeting \
    inventory onboarding refactoring debugging deployment rollback hotfix retrospective \
    standup roadmap backlog sprint milestone prototype wireframe mockup benchmark dashboard \
    newsletter webinar workshop seminar lecture tutorial homework assignment thesis essay \
    dissertation exam quiz syllabus transcript scholarship internship apprenticeship \
    mortgage rent insurance pension savings paycheck bonus refund reimbursement taxes \
    appointment checkup vaccination prescription physiotherapy stretching meditation \
    rehearsal audition recital premiere soundcheck encore setlist tryout scrimmage \
    tournament playoff league fundraiser auction raffle bake-sale garage-sale renovation \
    plumbing wiring insulation drywall tiling roofing landscaping fencing paving carpooling \
    commute layover jetlag itinerary reservation booking checkout boarding customs visa \
    translation subtitles captions podcast livestream interview questionnaire survey census \
    election referendum petition protest volunteer shelter donation charity mentorship \
    babysitting tutoring coaching dogsitting housesitting errands decluttering unpacking \
    moving-day housewarming farewell reunion anniversary graduation christening baby-shower \
    bachelorette hackathon conference keynote panel networking recruiting hiring layoffs \
    restructuring merger acquisition audit compliance procurement invoicing payroll \
    forecasting spreadsheet analytics migration upgrade outage incident postmortem \
    on-call escalation ticket changelog documentation handover";

const ADJECTIVES: &str = "quiet noisy bright dim warm chilly humid dusty shiny rusty fragile sturdy \
    ancient modern tiny enormous narrow wide crowded empty fancy plain cozy awkward gentle fierce \
    clumsy graceful bitter sweet sour salty spicy bland crisp soggy fluffy smooth rough sharp \
    blunt heavy light cheap pricey sleek bulky cheerful gloomy lively sleepy curious stubborn \
    patient restless honest sneaky elegant shabby tidy messy vivid faded golden silver crimson \
    emerald turquoise violet amber ivory charcoal scarlet colorful ordinary peculiar remarkable \
    mysterious familiar strange delightful dreadful marvelous terrible splendid wobbly bouncy \
    slippery sticky fuzzy prickly silky velvety glossy matte hollow solid frozen steaming \
    lukewarm breezy stormy foggy sunny cloudy rainy snowy windy muddy sandy rocky grassy leafy \
    wooden metallic plastic ceramic handmade secondhand vintage brand-new homemade overpriced \
    underrated enormous flimsy luxurious rustic suburban rural urban coastal alpine tropical \
    delicate robust brilliant mediocre generous stingy polite rude friendly grumpy \
    adventurous affordable anxious battered beloved boisterous breathtaking brittle buttery \
    calm careful careless chaotic charming chunky classic clever compact complicated confusing \
    crooked crumbly cumbersome dainty damp dazzling decent dense dignified dramatic dreamy \
    drowsy eager earnest eccentric efficient elaborate energetic enthusiastic exhausted exotic \
    faint faithful feeble festive filthy flashy flawless flexible fragrant frantic frosty \
    frugal futuristic gigantic glamorous gorgeous gritty handsome harmless hasty hearty \
    hideous hilarious hopeful humble hungry icy idle impressive intense jolly joyful jumbo \
    juicy keen knotty lanky lavish lazy lean legendary lonely loyal lumpy majestic massive \
    meek mellow mighty miniature moody mossy nervous nimble nostalgic obvious odd oily \
    outrageous pale peaceful perfect playful pleasant plump polished precious puzzled quaint \
    quirky radiant rapid rare relaxed reliable rickety ripe rowdy scenic scrappy scruffy \
    serene shaggy shy silly simple sincere skinny slender sloppy sluggish smoky snug soft \
    sparkling speedy spotless squeaky stale steep stiff striped stuffy subtle sunburnt \
    superb swift tame tangy tender tense thick thirsty thorny thoughtful tough tricky \
    trusty unusual upbeat useful vast wary weary whimsical wild wiry witty zesty";

const NOUNS: &str = "kitchen garden balcony staircase hallway basement attic window curtain \
    lamp sofa armchair bookshelf fireplace bakery market bridge harbor lighthouse museum gallery \
    theater cinema library stadium park fountain plaza alley cathedral temple monastery castle \
    village suburb neighborhood station platform ferry tram subway bicycle scooter motorcycle \
    van truck backpack suitcase umbrella jacket sweater scarf boots sneakers hat glove necklace \
    bracelet watch notebook pencil marker laptop keyboard monitor charger headphones speaker \
    camera tripod lens guitar piano violin drum trumpet saxophone record playlist concert \
    festival parade wedding birthday picnic barbecue potluck brunch dinner breakfast dessert \
    cake pie cookie muffin croissant bagel sandwich salad soup stew noodle dumpling pancake \
    waffle omelet smoothie lemonade espresso cappuccino teapot kettle blender oven fridge \
    freezer microwave dishwasher toaster pan skillet cutting-board spatula ladle colander \
    puppy kitten parrot hamster goldfish turtle rabbit pony squirrel pigeon seagull owl \
    fox deer badger hedgehog beetle butterfly dragonfly spider snail lake river creek pond \
    waterfall canyon valley meadow forest jungle desert dune glacier volcano island peninsula \
    cliff cave trail summit ridge campsite cabin cottage farmhouse barn greenhouse orchard \
    vineyard meadowlark sunflower tulip orchid cactus fern moss ivy maple oak birch willow \
    pine cedar spreadsheet presentation deadline budget invoice receipt contract proposal \
    memo agenda whiteboard projector printer stapler elevator lobby receptionist landlord \
    plumber mechanic barista waiter cashier tourist stranger neighbor toddler teenager \
    grandparent roommate classmate teammate coach referee audience crowd choir orchestra \
    puzzle riddle rumor story joke anecdote postcard letter parcel stamp envelope map compass \
    flashlight lantern candle blanket pillow mattress hammock tent sleeping-bag thermos canteen \
    accordion acorn airport album anchor apron aquarium arcade archive arena attic auction \
    avalanche avocado bakery balloon bandage banjo banner barrel basket bathtub beach beacon \
    bench blizzard blueprint boardwalk bonfire bouquet boutique bowl bracelet brick broom \
    bucket buffet bulldozer bungalow cafeteria calendar canal candle canoe canvas carnival \
    carousel carpet cartoon casserole catalog ceiling cellar chandelier chapel chimney \
    chessboard chopsticks clinic closet cobblestone cockpit coconut comet cornfield corridor \
    costume courtyard crane crayon crossword cupboard cushion dashboard daisy diary dinosaur \
    doorbell doormat drawer driveway easel elbow embassy engine escalator exhibit fabric \
    factory fence ferris-wheel fiddle fireworks flagpole flamingo flute footbridge fortress \
    freight gadget garage gazebo glacier goggles gondola gravel greenhouse guidebook gym \
    hairbrush hammer handbag harbor harmonica haystack helmet highway hilltop hostel hotel \
    iceberg igloo inn jar jeep jigsaw kayak keychain kiosk kite ladder lagoon lawn lemon \
    locker locomotive luggage magnet mailbox mansion marathon marina mascot meadow mirror \
    monument mosaic motel mural mushroom napkin necktie newspaper nursery oasis observatory \
    olive opera orchard pagoda paintbrush palace pantry parachute passport pavilion pebble \
    pelican pendant penguin pharmacy piano pier pineapple pizza planetarium playground \
    pocket porch pottery pretzel pumpkin quilt raft railway raincoat ranch recipe reef \
    restaurant ribbon rooftop rowboat rucksack saddle sailboat sandcastle satchel scarecrow \
    sculpture seashell shed shipwreck shovel skateboard skyline skyscraper sled sneaker \
    snowman souvenir stadium statue steeple stove suitcase sundial surfboard swamp sweatshirt \
    swing tablecloth tapestry telescope terrace thermostat ticket toolbox tractor trampoline \
    treehouse trolley trophy tugboat tunnel typewriter ukulele vase vending-machine veranda \
    viaduct vineyard wagon wallet wardrobe warehouse wheelbarrow whistle windmill workshop \
    wristwatch xylophone yacht yard zipper zoo almond apricot artichoke asparagus barley \
    basil beetroot blackberry broccoli cabbage carrot cauliflower celery cherry chestnut \
    chickpea cinnamon clove cranberry cucumber eggplant fennel fig garlic ginger grapefruit \
    hazelnut honey kale kiwi leek lentil lime mango melon mint nutmeg oatmeal onion oregano \
    papaya paprika parsley peach peanut pear pepper pistachio plum pomegranate potato quince \
    radish raspberry rhubarb rosemary saffron sage spinach squash strawberry thyme tomato \
    turnip vanilla walnut watermelon yogurt zucchini albatross antelope armadillo beaver \
    bison buffalo camel cheetah chipmunk cobra coyote crab crocodile dolphin donkey eagle \
    elephant falcon ferret flamingo frog gazelle giraffe gorilla hawk heron hippo jaguar \
    kangaroo koala lemur leopard lizard llama lobster lynx magpie meerkat mole moose \
    octopus ostrich otter panda panther peacock platypus porcupine puffin raccoon reindeer \
    rhino salmon seal shark sloth sparrow stork swan tiger toucan walrus weasel whale wolf \
    wombat woodpecker zebra";

const VERBS: &str = "repainted rearranged borrowed returned fixed cleaned polished assembled \
    dismantled decorated photographed sketched measured weighed wrapped unwrapped packed \
    unpacked carried dragged lifted dropped spilled splashed scrubbed mopped swept dusted \
    folded ironed stitched patched glued taped labeled sorted stacked hid discovered noticed \
    ignored admired criticized praised recommended reviewed compared replaced upgraded \
    rescued adopted followed chased fed walked trained watered planted pruned harvested \
    baked roasted grilled stirred tasted seasoned sliced chopped peeled blended \
    abandoned accepted accused adjusted adored annoyed appreciated arranged attacked \
    balanced bargained blamed bookmarked bothered bribed brightened buried calculated \
    captured celebrated challenged charged cheered chewed circled claimed climbed collected \
    complained confused copied counted covered crushed damaged delayed delivered described \
    destroyed disturbed doubted drained dreamed emptied encouraged entertained escaped \
    examined explained exploded filled flattened floated frightened gathered grabbed greeted \
    guarded guessed hammered handled hugged hurried identified imagined impressed improved \
    interrupted invented invited juggled kicked knitted knocked launched licked listed \
    locked mended misplaced mixed mocked nailed nudged offered opened ordered painted \
    parked pinched poked poured predicted preferred presented printed promised protected \
    pulled pumped punched pushed questioned raced rained reached recorded refused relaxed \
    remembered removed repaired reported rescued rinsed robbed rolled rubbed ruined rushed \
    saved scattered scolded scratched screamed searched shared shivered signed sketched \
    smashed sneezed snored soaked spared sparked squashed squeezed stamped stared startled \
    steered stitched stretched stuffed suggested supplied surprised suspected teased \
    tickled tied towed traced traded trapped tricked trimmed tripped troubled trusted \
    tugged twisted unlocked untied vanished visited waved welcomed whispered wiped wobbled \
    worried wrecked yawned zipped";

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use strataflow_log::record::Role;

    use super::*;
    use strataflow_pipeline::source::jsonl::JsonlReader;

    fn archive(messages: u64, threads: u32, seed: u64, tenants: u32) -> (Vec<u8>, SyntheticStats) {
        let options = SyntheticOptions {
            messages,
            threads,
            seed,
            tenants,
        };
        let mut out = Vec::new();
        let stats = write_archive(&options, &mut out).unwrap();
        (out, stats)
    }

    #[test]
    fn same_options_same_bytes() {
        let (a, sa) = archive(3_000, 17, 42, 2);
        let (b, sb) = archive(3_000, 17, 42, 2);
        assert_eq!(blake3::hash(&a), blake3::hash(&b));
        assert_eq!(sa, sb);
        assert_eq!(sa.bytes, a.len() as u64);
        let (c, _) = archive(3_000, 17, 43, 2);
        assert_ne!(blake3::hash(&a), blake3::hash(&c));
    }

    #[test]
    fn golden_archive() {
        let (bytes, stats) = archive(200, 3, 7, 1);
        assert_eq!(stats.messages, 200);
        assert_eq!(stats.threads, 3);
        assert_eq!(
            blake3::hash(&bytes).to_hex().as_str(),
            "8e0abe6052d1205f5b5cdce11b667402e3237c4d2f56b8e3c693ab1b9c05d825",
            "the synthetic archive changed; if on purpose, update this hash"
        );
    }

    #[test]
    fn streaming_iterator_matches_the_file() {
        let options = SyntheticOptions {
            messages: 500,
            threads: 5,
            seed: 3,
            tenants: 1,
        };
        let mut text = String::new();
        for m in messages(&options) {
            m.write_json_line(&mut text);
        }
        let (bytes, _) = archive(500, 5, 3, 1);
        assert_eq!(text.as_bytes(), bytes.as_slice());
    }

    #[test]
    fn parses_with_the_jsonl_source_and_keeps_its_promises() {
        let (bytes, stats) = archive(20_000, 37, 11, 3);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("synthetic.jsonl");
        std::fs::write(&path, &bytes).unwrap();
        let mut per_thread: BTreeMap<(String, String), (u64, Role, i64)> = BTreeMap::new();
        let mut count = 0u64;
        let mut tool_calls = 0u64;
        let mut pastes = 0u64;
        let mut acks = 0u64;
        let mut tenants = BTreeSet::new();
        let mut vocabulary = BTreeSet::new();
        for item in JsonlReader::open(&path).unwrap() {
            let m = item
                .unwrap()
                .unwrap_or_else(|r| panic!("rejected: {}", r.error));
            count += 1;
            tool_calls += m.tool_calls.len() as u64;
            tenants.insert(m.tenant.clone());
            let paras: Vec<&str> = m.content.split("\n\n").collect();
            if paras
                .windows(2)
                .any(|w| w[0] == w[1] && w[0].chars().count() >= 80)
            {
                pastes += 1;
            }
            if m.content == "Okay." {
                acks += 1;
            }
            for w in m.content.split(|c: char| !c.is_alphabetic()) {
                if !w.is_empty() {
                    vocabulary.insert(w.to_lowercase());
                }
            }
            let key = (m.tenant.clone(), m.thread.clone());
            match per_thread.get_mut(&key) {
                None => {
                    assert_eq!(m.role, Role::User, "threads start with a user message");
                    assert_eq!(m.external_id, "m000001");
                    per_thread.insert(key, (1, m.role, m.time.utc_ms));
                }
                Some((n, last_role, last_ms)) => {
                    let want = if *last_role == Role::User {
                        Role::Assistant
                    } else {
                        Role::User
                    };
                    assert_eq!(m.role, want, "roles alternate in {key:?}");
                    assert!(m.time.utc_ms > *last_ms, "time increases in {key:?}");
                    *n += 1;
                    assert_eq!(m.external_id, format!("m{n:06}"));
                    *last_role = m.role;
                    *last_ms = m.time.utc_ms;
                }
            }
        }
        assert_eq!(count, 20_000);
        assert_eq!(stats.messages, 20_000);
        assert_eq!(per_thread.len(), 37);
        assert_eq!(stats.threads, 37);
        assert_eq!(tenants.len(), 3);
        assert_eq!(stats.tool_calls, tool_calls);
        assert!(tool_calls > 200, "{tool_calls} tool calls");
        assert!(pastes > 50, "{pastes} repeated pastes");
        assert!(acks > 50, "{acks} acknowledgements");
        assert!(
            vocabulary.len() > 1_800,
            "{} distinct words",
            vocabulary.len()
        );
    }

    #[test]
    fn counts_are_exact_for_awkward_shapes() {
        for (count, threads) in [(0, 4), (1, 4), (4, 4), (5, 4), (3, 10), (1_001, 7)] {
            let options = SyntheticOptions {
                messages: count,
                threads,
                seed: 1,
                tenants: 1,
            };
            let all: Vec<SyntheticMessage> = messages(&options).collect();
            assert_eq!(all.len() as u64, count);
            let threads_seen: BTreeSet<&str> = all.iter().map(|m| m.thread.as_str()).collect();
            assert_eq!(threads_seen.len() as u64, u64::from(threads).min(count));
        }
    }

    /// Generation speed, ad hoc: `cargo test --release -p
    /// strataflow-pipeline synthetic::tests::speed -- --ignored --nocapture`.
    #[test]
    #[ignore = "timing, run in release by hand"]
    fn speed() {
        let options = SyntheticOptions {
            messages: 1_000_000,
            threads: 1_000,
            seed: 1,
            tenants: 4,
        };
        let start = std::time::Instant::now();
        let stats = write_archive(&options, &mut std::io::sink()).unwrap();
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{} messages, {} MB in {secs:.2} s: {:.0} messages/s",
            stats.messages,
            stats.bytes / 1_000_000,
            stats.messages as f64 / secs
        );
    }

    #[test]
    fn dates_format_like_rfc3339() {
        let mut s = String::new();
        push_rfc3339(&mut s, 1_683_554_160_000, 0);
        assert_eq!(s, "2023-05-08T13:56:00Z");
        s.clear();
        push_rfc3339(&mut s, 1_683_554_160_000, -300);
        assert_eq!(s, "2023-05-08T08:56:00-05:00");
        s.clear();
        push_rfc3339(&mut s, 1_683_554_160_000, 330);
        assert_eq!(s, "2023-05-08T19:26:00+05:30");
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    #[test]
    fn a_thread_takes_its_draws_and_skip_equals_drawing() {
        let mut drawn = Rng(42);
        let _ = new_thread(&mut drawn, 3, 2, 5);
        let mut skipped = Rng(42);
        skipped.skip(DRAWS_PER_THREAD);
        assert_eq!(drawn.0, skipped.0);
        let mut drawn = Rng(7);
        for _ in 0..1_000 {
            drawn.next_u64();
        }
        let mut skipped = Rng(7);
        skipped.skip(1_000);
        assert_eq!(drawn.0, skipped.0);
    }

    /// Fewer messages than threads: the threads without messages are not
    /// built, yet the bytes are those the generator wrote when it built
    /// every thread (digests taken before that change).
    #[test]
    fn unused_threads_change_no_byte_and_cost_nothing() {
        for (messages, threads, seed, tenants, digest) in [
            (
                3,
                10,
                7,
                2,
                "cdf6d06749edd0f6bf6e1c4f60d8522c601131f0cb84cd6d8d7fbf06b87b5de2",
            ),
            (
                1,
                1_000,
                7,
                1,
                "02a56f09d21ff06e516c0098a9afe0dc9f858cf4e06a38705469666568a1a506",
            ),
            (
                5,
                100,
                1,
                30,
                "8333005089f2e7841d75bcdd1dae0db39fcbb49c9499b317903ee8e2b8f18736",
            ),
            (
                50,
                7,
                9,
                3,
                "1f92f535fab939e08e0fcda499f3e01c93505e18857ae4abef8f8703702818ee",
            ),
        ] {
            let (bytes, stats) = archive(messages, threads, seed, tenants);
            assert_eq!(stats.messages, messages);
            assert_eq!(
                blake3::hash(&bytes).to_hex().as_str(),
                digest,
                "{messages} messages, {threads} threads"
            );
        }
        // One message of a million threads builds one thread.
        let options = SyntheticOptions {
            messages: 1,
            threads: 1_000_000,
            seed: 7,
            tenants: 1_000_000,
        };
        let generator = messages(&options);
        assert_eq!(generator.threads.len(), 1);
        assert_eq!(generator.thread_names.len(), 1);
        assert_eq!(generator.count(), 1);
    }
}
