export default function OverviewPage() {
  return <main>Keyward</main>;
}
