//! Work spread over the machine's cores: how many threads a large piece of work is cut for,
//! and running its parts on a thread each.

/// The threads a large piece of work is spread over: this machine's cores, at most eight.
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8)
}

/// `work` done on each of `parts`, a thread each, the results in the parts' order. A panic in
/// one part is raised again here.
pub(crate) fn on_threads<P: Send, R: Send>(
    parts: impl IntoIterator<Item = P>,
    work: impl Fn(P) -> R + Sync,
) -> Vec<R> {
    let work = &work;
    std::thread::scope(|scope| {
        let workers: Vec<_> =
            parts.into_iter().map(|part| scope.spawn(move || work(part))).collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_come_back_in_the_order_of_the_parts() {
        let squares = super::on_threads(1..=6u64, |n| n * n);
        assert_eq!(squares, [1, 4, 9, 16, 25, 36]);
    }
}
