-- AlterTable
ALTER TABLE "PromptVersion" ADD COLUMN     "authorKeyId" TEXT;

-- AlterTable
ALTER TABLE "Run" ADD COLUMN     "includes" JSONB,
ADD COLUMN     "keyId" TEXT,
ADD COLUMN     "promptLabel" TEXT,
ADD COLUMN     "replayOf" TEXT,
ADD COLUMN     "request" JSONB,
ADD COLUMN     "splitBucket" INTEGER,
ADD COLUMN     "tags" JSONB;

-- AlterTable
ALTER TABLE "Session" ADD COLUMN     "forkedFrom" JSONB;

-- CreateTable
CREATE TABLE "PromptLabel" (
    "tenantId" TEXT NOT NULL,
    "promptId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "split" JSONB,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PromptLabel_pkey" PRIMARY KEY ("tenantId","promptId","name")
);

-- CreateTable
CREATE TABLE "PromptLabelMove" (
    "tenantId" TEXT NOT NULL,
    "promptId" TEXT NOT NULL,
    "label" TEXT NOT NULL,
    "move" INTEGER NOT NULL,
    "version" INTEGER NOT NULL,
    "split" JSONB,
    "previousVersion" INTEGER,
    "keyId" TEXT,
    "movedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "PromptLabelMove_pkey" PRIMARY KEY ("tenantId","promptId","label","move")
);

-- CreateTable
CREATE TABLE "RunTag" (
    "tenantId" TEXT NOT NULL,
    "runId" TEXT NOT NULL,
    "tag" TEXT NOT NULL,
    "startedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "RunTag_pkey" PRIMARY KEY ("runId","tag")
);

-- CreateIndex
CREATE INDEX "RunTag_tenantId_tag_startedAt_idx" ON "RunTag"("tenantId", "tag", "startedAt");

-- CreateIndex
CREATE INDEX "Run_tenantId_startedAt_idx" ON "Run"("tenantId", "startedAt");

-- CreateIndex
CREATE INDEX "Run_tenantId_promptId_promptVersion_idx" ON "Run"("tenantId", "promptId", "promptVersion");

-- AddForeignKey
ALTER TABLE "RunTag" ADD CONSTRAINT "RunTag_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE CASCADE ON UPDATE CASCADE;
