//! The `kraft-operator` binary.

fn main() {
    println!("kraft-operator: not built yet");
}
