//! Command-line definitions and one function per subcommand.

pub fn main() -> i32 {
    0
}
