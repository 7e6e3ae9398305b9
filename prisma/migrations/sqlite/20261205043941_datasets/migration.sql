-- CreateTable
CREATE TABLE "Dataset" (
    "tenantId" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "description" TEXT,
    "version" INTEGER NOT NULL DEFAULT 0,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("tenantId", "id")
);

-- CreateTable
CREATE TABLE "DatasetVersion" (
    "tenantId" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "itemCount" INTEGER NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("tenantId", "datasetId", "version")
);

-- CreateTable
CREATE TABLE "DatasetItem" (
    "tenantId" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "position" INTEGER NOT NULL,
    "variables" JSONB NOT NULL,
    "input" TEXT,
    "expected" JSONB,
    "metadata" JSONB,
    "sourceRunId" TEXT,
    "addedIn" INTEGER NOT NULL,
    "removedIn" INTEGER,

    PRIMARY KEY ("tenantId", "datasetId", "id")
);

-- CreateIndex
CREATE UNIQUE INDEX "DatasetItem_tenantId_datasetId_position_key" ON "DatasetItem"("tenantId", "datasetId", "position");
