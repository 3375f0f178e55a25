fn main() -> std::process::ExitCode {
    gpuplan::commands::main()
}
