fn main() {
    println!("swarm: the window arrives with the simulation; see README.md");
}
