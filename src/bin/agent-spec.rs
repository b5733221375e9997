//! `agent-spec atlas <args>` is an exact alias of `atlas <args>` (R-CLI-3).

fn main() {
    let mut args = std::env::args_os().skip(1);
    match args.next() {
        Some(first) if first == "atlas" => {
            let argv = std::iter::once("atlas".into()).chain(args);
            std::process::exit(atlas::cli::app::run(argv));
        }
        _ => {
            eprintln!("usage: agent-spec atlas <command> [args…]  (an alias of `atlas`)");
            std::process::exit(2);
        }
    }
}
