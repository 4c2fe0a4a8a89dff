import ResumeCLI
import ResumeS3

await CommandLineTool.main(s3: S3Responses(), html: HTMLLinks())
