import ResumeCLI

await CommandLineTool.main(s3: nil)
