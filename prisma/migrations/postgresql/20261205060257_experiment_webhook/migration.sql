-- AlterTable
ALTER TABLE "Experiment" ADD COLUMN     "webhookUrl" TEXT;

-- AlterTable
ALTER TABLE "WebhookDelivery" ADD COLUMN     "experimentId" TEXT,
ALTER COLUMN "runId" DROP NOT NULL;
