fn main() {
    std::process::exit(atlas::cli::app::run(std::env::args_os()));
}
