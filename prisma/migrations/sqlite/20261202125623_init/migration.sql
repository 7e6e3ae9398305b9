-- CreateTable
CREATE TABLE "Prompt" (
    "tenantId" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "definitionHash" TEXT NOT NULL,
    "definition" JSONB NOT NULL,
    "description" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,

    PRIMARY KEY ("tenantId", "id")
);

-- CreateTable
CREATE TABLE "PromptVersion" (
    "tenantId" TEXT NOT NULL,
    "promptId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "definitionHash" TEXT NOT NULL,
    "definition" JSONB NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("tenantId", "promptId", "version")
);

-- CreateTable
CREATE TABLE "Profile" (
    "tenantId" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "definition" JSONB NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,

    PRIMARY KEY ("tenantId", "id")
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
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,

    PRIMARY KEY ("tenantId", "id")
);

-- CreateTable
CREATE TABLE "Message" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "position" INTEGER NOT NULL,
    "role" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "runId" TEXT,
    "interrupted" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Message_tenantId_sessionId_fkey" FOREIGN KEY ("tenantId", "sessionId") REFERENCES "Session" ("tenantId", "id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "QueueEntry" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "queueSequence" INTEGER NOT NULL,
    "priority" INTEGER NOT NULL DEFAULT 0,
    "status" TEXT NOT NULL,
    "request" JSONB NOT NULL,
    "requestBytes" INTEGER NOT NULL,
    "scheduleKey" TEXT,
    "fireAt" DATETIME,
    "runId" TEXT,
    "errorCode" TEXT,
    "errorMessage" TEXT,
    "unappliedSteerIds" JSONB,
    "queuedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "startedAt" DATETIME,
    "finishedAt" DATETIME,
    CONSTRAINT "QueueEntry_tenantId_sessionId_fkey" FOREIGN KEY ("tenantId", "sessionId") REFERENCES "Session" ("tenantId", "id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Run" (
    "id" TEXT NOT NULL PRIMARY KEY,
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
    "costUsd" REAL,
    "startedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "firstTokenAt" DATETIME,
    "finishedAt" DATETIME,
    "heartbeatAt" DATETIME,
    "lastProgressAt" DATETIME,
    "errorCode" TEXT,
    "errorMessage" TEXT,
    "terminalReason" TEXT
);

-- CreateTable
CREATE TABLE "RunEvent" (
    "tenantId" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "sequence" INTEGER NOT NULL,
    "runId" TEXT,
    "type" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "at" DATETIME NOT NULL,

    PRIMARY KEY ("tenantId", "sessionId", "sequence")
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
