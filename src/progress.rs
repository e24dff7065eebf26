//! Progress for long commands (`grid`, `certify`, `capture synth`). On a
//! terminal it is an indicatif bar; when stderr is not a terminal (CI, Slurm
//! logs) a bar's redraws would fill the log with control codes, so plain
//! lines such as `grid: 1234/9746 cases, 12 min elapsed, ETA 40 min` are
//! written every [`PLAIN_INTERVAL`] and once at the end.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How often a plain progress line is written when stderr is not a terminal.
pub const PLAIN_INTERVAL: Duration = Duration::from_secs(30);

pub struct Progress {
    label: String,
    /// What is counted (`cases`, `cells`).
    unit: &'static str,
    total: u64,
    done: u64,
    started: Instant,
    last_line: Instant,
    interval: Duration,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    /// A bar on a terminal, plain lines otherwise.
    pub fn new(label: &str, unit: &'static str, total: u64) -> Self {
        Self::with_mode(
            label,
            unit,
            total,
            std::io::stderr().is_terminal(),
            PLAIN_INTERVAL,
        )
    }

    pub fn with_mode(
        label: &str,
        unit: &'static str,
        total: u64,
        terminal: bool,
        interval: Duration,
    ) -> Self {
        let bar = terminal.then(|| {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template(&format!(
                    "{label}: {{elapsed_precise}} [{{bar:40}}] {{pos}}/{{len}} {{msg}} ETA {{eta}}"
                ))
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
        let now = Instant::now();
        Self {
            label: label.to_string(),
            unit,
            total,
            done: 0,
            started: now,
            last_line: now,
            interval,
            bar,
        }
    }

    pub fn set_message(&self, msg: String) {
        if let Some(bar) = &self.bar {
            bar.set_message(msg);
        }
    }

    pub fn inc(&mut self, n: u64) {
        self.done += n;
        match &self.bar {
            Some(bar) => bar.inc(n),
            None => {
                if self.last_line.elapsed() >= self.interval {
                    self.last_line = Instant::now();
                    eprintln!("{}", self.line());
                }
            }
        }
    }

    /// Clear the bar, or write the final plain line.
    pub fn finish(&self) {
        match &self.bar {
            Some(bar) => bar.finish_and_clear(),
            None => eprintln!("{}", self.line()),
        }
    }

    /// `grid: 1234/9746 cases, 12 min elapsed, ETA 40 min`.
    pub fn line(&self) -> String {
        let elapsed = self.started.elapsed();
        let mut out = format!(
            "{}: {}/{} {}, {} elapsed",
            self.label,
            self.done,
            self.total,
            self.unit,
            human(elapsed)
        );
        if self.done > 0 && self.done < self.total {
            let per = elapsed.as_secs_f64() / self.done as f64;
            let eta = Duration::from_secs_f64(per * (self.total - self.done) as f64);
            out.push_str(&format!(", ETA {}", human(eta)));
        }
        out
    }
}

fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min", s / 60)
    } else {
        format!("{} h {} min", s / 3600, (s % 3600) / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_line_counts_and_elapsed() {
        let mut p = Progress::with_mode("grid", "cases", 10, false, Duration::from_secs(3600));
        p.inc(4);
        let line = p.line();
        assert!(line.starts_with("grid: 4/10 cases, 0 s elapsed"), "{line}");
        assert!(line.contains("ETA"), "{line}");
        p.inc(6);
        assert!(!p.line().contains("ETA"));
    }

    #[test]
    fn durations_read_as_minutes_and_hours() {
        assert_eq!(human(Duration::from_secs(59)), "59 s");
        assert_eq!(human(Duration::from_secs(12 * 60 + 5)), "12 min");
        assert_eq!(human(Duration::from_secs(3 * 3600 + 120)), "3 h 2 min");
    }
}
