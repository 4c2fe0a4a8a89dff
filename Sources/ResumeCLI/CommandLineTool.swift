/// The entry point of the `resumectl` program.
public enum CommandLineTool {
    @MainActor
    public static func main() async {
        await Resumectl.main()
    }
}
