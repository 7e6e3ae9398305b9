-- CreateIndex
CREATE INDEX "Experiment_tenantId_createdAt_idx" ON "Experiment"("tenantId", "createdAt");
