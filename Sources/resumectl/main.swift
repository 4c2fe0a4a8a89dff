import ResumeCLI

await CommandLineTool.main()
