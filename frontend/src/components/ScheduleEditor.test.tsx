import { describe, expect, it } from "vitest";
import { describeSchedule } from "./ScheduleEditor";

describe("a schedule in words", () => {
  it("names intervals in the largest whole unit", () => {
    expect(describeSchedule({ everySeconds: 3600 })).toBe("Every hour");
    expect(describeSchedule({ everySeconds: 7200 })).toBe("Every 2 hours");
    expect(describeSchedule({ everySeconds: 86400 })).toBe("Every day");
    expect(describeSchedule({ everySeconds: 900 })).toBe("Every 15 minutes");
    expect(describeSchedule({ everySeconds: 90 })).toBe("Every 90 s");
  });

  it("shows cron with its time zone, and no schedule as when asked", () => {
    expect(describeSchedule({ cron: "0 9 * * 1-5", timezone: "Europe/Paris" })).toBe("Cron 0 9 * * 1-5 (Europe/Paris)");
    expect(describeSchedule({ cron: "0 * * * *" })).toBe("Cron 0 * * * * (UTC)");
    expect(describeSchedule(null)).toBe("Only when asked");
  });
});
