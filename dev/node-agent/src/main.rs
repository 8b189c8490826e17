//! Test-only node agent for the local Kubernetes cluster (see dev/README.md).

fn main() {
    println!("kraft-node-agent: not built yet");
}
