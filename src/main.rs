fn main() {
    std::process::exit(gvr_bench::cli::main());
}
