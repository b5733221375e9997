fn main() {
    std::process::exit(atlas::cli::run(std::env::args_os()));
}
