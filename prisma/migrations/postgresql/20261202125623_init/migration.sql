-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "Prompt" (
    "tenantId" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "definitionHash" TEXT NOT NULL,
    "definition" JSONB NOT NULL,
    "description" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Prompt_pkey" PRIMARY KEY ("tenantId","id")
);

-- CreateTable
CREATE TABLE "PromptVersion" (
    "tenantId" TEXT NOT NULL,
    "promptId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "definitionHash" TEXT NOT NULL,
    "definition" JSONB NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "PromptVersion_pkey" PRIMARY KEY ("tenantId","promptId","version")
);

-- CreateTable
CREATE TABLE "Profile" (
    "tenantId" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "definition" JSONB NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Profile_pkey" PRIMARY KEY ("tenantId","id")
);

-- CreateTable
CREATE TABLE "Session" (
    "tenantId" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "title" TEXT,
    "defaultProfileId" TEXT,
    "metadata" JSONB,
    "keepHistory" BOOLEAN NOT NULL DEFAULT true,
    "sequenceCeiling" INTEGER NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Session_pkey" PRIMARY KEY ("tenantId","id")
);

-- CreateTable
CREATE TABLE "Message" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "position" INTEGER NOT NULL,
    "role" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "runId" TEXT,
    "interrupted" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Message_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "QueueEntry" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "queueSequence" INTEGER NOT NULL,
    "priority" INTEGER NOT NULL DEFAULT 0,
    "status" TEXT NOT NULL,
    "request" JSONB NOT NULL,
    "requestBytes" INTEGER NOT NULL,
    "scheduleKey" TEXT,
    "fireAt" TIMESTAMP(3),
    "runId" TEXT,
    "errorCode" TEXT,
    "errorMessage" TEXT,
    "unappliedSteerIds" JSONB,
    "queuedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "startedAt" TIMESTAMP(3),
    "finishedAt" TIMESTAMP(3),

    CONSTRAINT "QueueEntry_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Run" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "sessionId" TEXT,
    "queueId" TEXT,
    "status" TEXT NOT NULL,
    "promptId" TEXT,
    "promptVersion" INTEGER,
    "profileId" TEXT,
    "backendId" TEXT,
    "model" TEXT,
    "definitionHash" TEXT,
    "renderedHash" TEXT,
    "settings" JSONB NOT NULL,
    "output" TEXT,
    "parsedOutput" JSONB,
    "validation" JSONB,
    "failoverAttempts" JSONB,
    "alternatives" JSONB,
    "inputTokens" INTEGER,
    "outputTokens" INTEGER,
    "costUsd" DOUBLE PRECISION,
    "startedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "firstTokenAt" TIMESTAMP(3),
    "finishedAt" TIMESTAMP(3),
    "heartbeatAt" TIMESTAMP(3),
    "lastProgressAt" TIMESTAMP(3),
    "errorCode" TEXT,
    "errorMessage" TEXT,
    "terminalReason" TEXT,

    CONSTRAINT "Run_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RunEvent" (
    "tenantId" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "sequence" INTEGER NOT NULL,
    "runId" TEXT,
    "type" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "RunEvent_pkey" PRIMARY KEY ("tenantId","sessionId","sequence")
);

-- CreateIndex
CREATE INDEX "Session_tenantId_createdAt_idx" ON "Session"("tenantId", "createdAt");

-- CreateIndex
CREATE INDEX "Message_runId_idx" ON "Message"("runId");

-- CreateIndex
CREATE UNIQUE INDEX "Message_tenantId_sessionId_position_key" ON "Message"("tenantId", "sessionId", "position");

-- CreateIndex
CREATE INDEX "QueueEntry_status_idx" ON "QueueEntry"("status");

-- CreateIndex
CREATE UNIQUE INDEX "QueueEntry_tenantId_sessionId_queueSequence_key" ON "QueueEntry"("tenantId", "sessionId", "queueSequence");

-- CreateIndex
CREATE INDEX "Run_tenantId_sessionId_startedAt_idx" ON "Run"("tenantId", "sessionId", "startedAt");

-- CreateIndex
CREATE INDEX "Run_status_heartbeatAt_idx" ON "Run"("status", "heartbeatAt");

-- CreateIndex
CREATE INDEX "RunEvent_runId_sequence_idx" ON "RunEvent"("runId", "sequence");

-- AddForeignKey
ALTER TABLE "Message" ADD CONSTRAINT "Message_tenantId_sessionId_fkey" FOREIGN KEY ("tenantId", "sessionId") REFERENCES "Session"("tenantId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "QueueEntry" ADD CONSTRAINT "QueueEntry_tenantId_sessionId_fkey" FOREIGN KEY ("tenantId", "sessionId") REFERENCES "Session"("tenantId", "id") ON DELETE CASCADE ON UPDATE CASCADE;
